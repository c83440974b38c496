def get_adapter_absolute_path(path):
    return path
