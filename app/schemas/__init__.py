"""Request and response models of the JSON contract (docs/API.md), with examples so /docs is a
usable reference. Fields beyond the contract are additive and optional.

Each shape is written here once: the services build their answers as these models (app/services/),
the routes declare them, and /openapi.json is generated from them. Both sides refuse a key they do
not name: a request with one is 422, a service that made one fails where it made it.

One module per chapter or endpoint family, on the shared bases of `base` (strict requests, answers
that refuse an unnamed key and a non-finite number, the attention kinds), each imported by its own
name (`from app.schemas.scaling import Scaling`): this package re-exports nothing, so a chapter's
shapes are its own file and no list names them.

A leaf: nothing here reads the settings or calls a service. Limits that depend on the server's
settings (the text's length, the gradient input's length) are checked once, by the services, and
told to clients by GET /api/health."""
