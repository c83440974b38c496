def hf_api():
    raise NotImplementedError("hub datasets are not part of the interop shims (no network)")
