(import "/work/main/training_config/glue/sst2.jsonnet") + {
  settings+:: { seed: 1, encoder: "archive-fz", cuda_device: 0 },
  model+: { encoder: { type: "lstm", input_size: 256, hidden_size: 256, num_layers: 2, bidirectional: true } },
  trainer+: { num_epochs: 6 },
}
