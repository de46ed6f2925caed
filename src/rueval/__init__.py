"""rueval: evaluate Russian language models on RussianSuperGLUE and TAPE."""

__version__ = "0.1.0"
