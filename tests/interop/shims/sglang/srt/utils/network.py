def _host_port(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def resolve_base_url(base_url: str, host: str, port: int) -> str:
    return base_url or f"http://{_host_port(host, port)}"


def resolve_host_port(base_url: str, host: str, port: int) -> str:
    return base_url or _host_port(host, port)
