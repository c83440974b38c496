MultiModalDataDict = dict
