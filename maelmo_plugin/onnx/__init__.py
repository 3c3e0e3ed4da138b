"""ONNX export of Masked ELMo (issue 31): a graph that ONNX Runtime runs without torch."""
