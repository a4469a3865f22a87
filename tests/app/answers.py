"""A service's typed result as a client reads it."""

from pydantic import BaseModel


def sent(result):
    """The JSON of `result` (a response model, or a list of them) with unset optional fields left
    out, as the routes send it."""
    if isinstance(result, BaseModel):
        return result.model_dump(mode="json", exclude_none=True)
    if isinstance(result, list | tuple):
        return [sent(item) for item in result]
    return result
