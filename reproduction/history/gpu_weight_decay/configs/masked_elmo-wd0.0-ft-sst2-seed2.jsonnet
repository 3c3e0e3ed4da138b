(import "/work/main/training_config/glue/sst2.jsonnet") + {
  settings+:: { seed: 2, encoder: "archive-ft", cuda_device: 0 },
  model+: { encoder: { type: "lstm", input_size: 128, hidden_size: 256, num_layers: 2, bidirectional: true } },
  trainer+: { num_epochs: 6 },
}
