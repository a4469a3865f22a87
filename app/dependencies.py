"""Typed dependencies: a handler states what it needs, tests swap it via dependency_overrides."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from app.config import Settings, get_settings
from app.services.registry import ModelRegistry


def get_registry(request: Request) -> ModelRegistry:
    return request.app.state.registry  # loaded once, in the lifespan


Registry = Annotated[ModelRegistry, Depends(get_registry)]
SettingsDep = Annotated[Settings, Depends(get_settings)]
