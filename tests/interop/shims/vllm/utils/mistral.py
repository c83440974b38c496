def is_mistral_tokenizer(tokenizer) -> bool:
    return False
