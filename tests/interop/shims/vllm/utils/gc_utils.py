import gc


def freeze_gc_heap():
    gc.collect()
    gc.freeze()
