(import "/work/main/training_config/lm/pretrain_elmo_small.jsonnet") + {
  data:: {"train": "/work/main/.gpu/train.txt.xz", "validation": "/work/main/.gpu/wikitext2-valid-1500.txt", "vocab": "/work/main/.gpu/vocab.txt"},
  sizes+:: { document_start_pattern: "^ = [^=].* = $", epochs: 2, optimizer: "adam", lr: 0.004, stateful: false },
  settings+:: { seed: 1, cuda_device: 0 },
  trainer+: { optimizer: { type: "adamw", lr: 0.004, weight_decay: 0.01, parameter_groups: [[["bias", "norm"], { weight_decay: 0.0 }]] }, },
}
