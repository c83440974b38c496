from transformers import AutoTokenizer


def get_tokenizer(name, *args, trust_remote_code=False, tokenizer_revision=None, **kw):
    return AutoTokenizer.from_pretrained(name, trust_remote_code=trust_remote_code, revision=tokenizer_revision)
