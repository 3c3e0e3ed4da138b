"""Masked ELMo for Hugging Face `transformers`: the model's own code (custom code) and the export."""
