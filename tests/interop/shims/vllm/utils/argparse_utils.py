import argparse


class FlexibleArgumentParser(argparse.ArgumentParser):
    """vLLM's parser also accepts --a_b for --a-b; the interop tests pass the dashed spelling."""
