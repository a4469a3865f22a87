"""One APIRouter per concern; each handler validates, calls one service and returns its result."""
