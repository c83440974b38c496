class LoRARequest:  # never built without --lora-modules
    def __init__(self, *a, **kw):
        raise NotImplementedError("LoRA is not part of the interop shims")
