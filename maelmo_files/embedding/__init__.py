"""The files of bulk embedding: their HDF5 layout, a shard's record and the merge of shards."""
