"""Measurements the chapters show: tensors in, tensors out, one module per chapter, each tested
against its definition. The server calls them; they know nothing of HTTP or JSON."""
