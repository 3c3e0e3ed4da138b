(import "/work/main/training_config/lm/pretrain_small.jsonnet") + {
  data:: {"train": "/work/main/.gpu/train.txt.xz", "validation": "/work/main/.gpu/wikitext2-valid-1500.txt", "vocab": "/work/main/.gpu/vocab.txt"},
  sizes+:: { document_start_pattern: "^ = [^=].* = $", epochs: 2,  },
  settings+:: { seed: 1, cuda_device: 0 },
  trainer+: { optimizer+: { lr: 0.001 }, },
}
