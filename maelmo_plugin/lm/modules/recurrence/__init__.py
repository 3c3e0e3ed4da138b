"""
Every form of the projected biLSTM layer, and the one function that chooses among them
(`choice.py`, whose docstring is this folder's map).
"""
