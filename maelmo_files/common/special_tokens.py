"""
The special tokens of every Masked ELMo word-piece vocabulary, at ids 0-4 of its `vocab.txt` in this order:
`maelmo-vocab` writes them there, and the tokenizer, the AllenNLP vocabulary and the masking rely on those ids
(`maelmo_plugin/common/wordpiece.py`).
"""

PAD, UNK, CLS, SEP, MASK = "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"
REQUIRED_SPECIAL_TOKENS = (PAD, UNK, CLS, SEP, MASK)
