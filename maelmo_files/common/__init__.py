"""What the families share that needs no model: text files, partial outputs, the special tokens."""
