"""LoRA SFT of the student with TRL and PEFT; writes a llama.cpp LoRA GGUF and a PEFT folder."""
