"""
The arena (`maelmo maelmo-arena`, docs/encoders.md): encoders compared fairly, each at its own tuned learning
rate, on paired seeds, gated against its untrained architecture, with a verdict by one rule. It registers no
class: the command and the reproduction import what they use.
"""
