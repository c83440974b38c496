def encode_image_url(*a, **kw):
    raise NotImplementedError("image datasets are not part of the interop shims")


def fetch_image(*a, **kw):
    raise NotImplementedError("image datasets are not part of the interop shims")
