"""A token store's files, written without a tokenizer: the store, a part of `maelmo-prepare --shard`, their merge."""
