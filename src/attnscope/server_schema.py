"""``attnscope serve``'s request and answer types (strict pydantic models: ``"head": true``,
``"layer": 1.0`` and ``"decimals": "4"`` are 422, not coerced) and the one-sentence messages of a
request that is JSON but wrong."""

from __future__ import annotations

import json
from functools import reduce
from typing import Optional

from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic_core import PydanticCustomError

from .i18n import Msg, text, word
from .viewer import data as view_data_mod
from .viewer.run import unicode_problem_msg


class StrictRequest(BaseModel):
    """The base of every request body: unknown keys refused, no coercion, strings checked for
    broken Unicode."""

    # strict: JSON true is not head 1, 1.0 is not layer 1, "4" is not 4
    model_config = ConfigDict(extra="forbid", strict=True)

    @field_validator("*", mode="after")
    @classmethod
    def _valid_unicode(cls, v, info):
        if isinstance(v, str):
            problem = unicode_problem_msg(v, from_bytes=False)  # JSON: "\udc80" is an escape, not a byte
            if problem:  # the sentence in English
                raise PydanticCustomError("invalid_unicode", "{what} " + str(problem), {"what": info.field_name})
        return v


class ViewRequest(StrictRequest):
    text: str = Field(description="The text to look at.", examples=["The bank of the river."])
    compare: Optional[str] = Field(None, description="A second text for the context view.",
                                   examples=["I deposited money at the bank."])
    token: Optional[str] = Field(None, description="The token the two texts share (default: the first shared one).")
    decimals: int = Field(4, ge=0, le=view_data_mod.MAX_DECIMALS, description="Decimals the page starts with.")
    attribution: bool = Field(False, description="Also the matrices of the page's attribution switch (norm, rollout, "
                              "ALTI, value zeroing: model.attribute's), for texts of up to 64 tokens; the served "
                              "page asks for them.")


class HeadRequest(StrictRequest):
    text: str = Field(examples=["The bank of the river."])
    layer: int = Field(0, description="Layer index, 0-based.")
    head: int = Field(0, description="Head index, 0-based.")


class StepRequest(HeadRequest):
    query: int = Field(0, description="Position of the query token (0 is [CLS] in BERT models).")


class ModelInfo(BaseModel):
    name: str
    family: Optional[str]
    n_layers: int = Field(description="Layers of the model; of its encoder for an encoder–decoder model.")
    n_decoder_layers: Optional[int] = Field(None, description="An encoder–decoder model's decoder layers; "
                                            "absent for one-stack models.")
    n_heads: int
    d_model: int
    d_head: int
    max_tokens: int
    max_chars: int
    version: str


class Attention(BaseModel):
    tokens: list[str]
    layer: int
    head: int
    weights: list[list[float]] = Field(description="(n, n): row = query, column = key; rows sum to 1.")


class Steps(BaseModel):
    tokens: list[str]
    layer: int
    head: int
    query: int
    d_k: int
    factor: float = Field(description="Raw scores are multiplied by this (1/√d_k).")
    raw: list[float] = Field(description="q·k for every key.")
    scaled: list[Optional[float]] = Field(description="raw × factor, plus the position scheme's score term where it "
                                          "has one (ALiBi: slope · key position); null where masked (causal models).")
    shift: float = Field(description="Subtracted before exp when the row maximum is beyond ±50, else 0.")
    exp: list[float]
    sum: float
    weights: list[float]
    out: list[float] = Field(description="Σ weight · v: this head's part of the query's new vector.")


def error_response(status: int, detail: str, headers: Optional[dict] = None) -> JSONResponse:
    """The JSON ``{"detail": …}`` every error of the API answers with."""
    return JSONResponse(status_code=status, content={"detail": detail}, headers=headers)


#: The schema of that answer: what /openapi.json says a 422 is, in place of FastAPI's default
#: (``detail``: a list of pydantic errors, which this API never answers)
ERROR_SCHEMA = {"title": "Error", "type": "object", "required": ["detail"],
                "properties": {"detail": {"title": "Detail", "type": "string",
                                          "description": "One sentence naming the problem, in serve's --lang."}}}


def with_error_schema(spec: dict) -> dict:
    """``spec`` (an OpenAPI document from FastAPI) with its 422 answers described as they are:
    HTTPValidationError is :data:`ERROR_SCHEMA`, and pydantic's ValidationError, used by it only, goes."""
    schemas = spec.get("components", {}).get("schemas", {})
    if "HTTPValidationError" in schemas:
        schemas["HTTPValidationError"] = ERROR_SCHEMA
        schemas.pop("ValidationError", None)
    return spec


#: pydantic's error types said in attnscope's words (key, the bound's name in the error's ctx)
_KEYED = {"greater_than_equal": ("errors.core_server_at_least", "ge"),
          "less_than_equal": ("errors.core_server_at_most", "le"), "list_type": ("errors.core_server_list", ""),
          "int_type": ("errors.core_server_int", ""), "string_type": ("errors.core_server_str", ""),
          "bool_type": ("errors.core_server_bool", "")}


#: What an empty body is told to send, by the model's kind (an encoder–decoder's /api/view reads two texts).
EXAMPLE_BODY = '{"text": "The bank of the river."}'
EXAMPLE_PAIR = '{"source": "translate English to German: The house is wonderful.", "target": "Das Haus ist wunderbar."}'


def validation_message(exc: RequestValidationError, content_type: Optional[str] = None,
                       example: Optional[str] = EXAMPLE_BODY, lang: str = "en") -> tuple[int, str]:
    """(status, one sentence in ``lang``) for a request body FastAPI could not validate: 415 for a
    body sent with another content type than JSON (FastAPI then never parses it: every field would
    look wrong), 400 for broken JSON, else 422 naming each field and what it must be. ``example``:
    the body an empty request is told to send (None: the endpoint's fields are at /docs)."""
    if content_type and not is_json_type(content_type):
        return 415, text("errors.core_server_content_type", lang, got=repr(content_type.split(";")[0].strip()))
    errors = exc.errors()
    if not content_type and any(e.get("type") in _NOT_OBJECT and not _field(e) for e in errors):
        # FastAPI reads a body without a content type as bytes, never as JSON: say so, not "must be a JSON object"
        return 415, text("errors.core_server_no_content_type", lang)
    for e in errors:
        if e.get("type") == "json_invalid":  # FastAPI's: loc ("body", position), ctx {"error": json's reason}
            why = str((e.get("ctx") or {}).get("error", e.get("msg")))
            loc = e.get("loc") or ()
            return 400, text("errors.core_server_json", lang, at=loc[-1] if loc else 0,
                             why=text(JSON_WHY[why], lang) if why in JSON_WHY else why)
    parts = []
    for e in errors:
        loc = _field(e)
        where = ".".join(loc) or "body"
        kind = e.get("type")
        if kind == "extra_forbidden":
            parts.append(text("errors.core_server_unknown_field", lang, field=repr(where)))
        elif kind == "missing" and not loc:
            return 422, (text("errors.core_server_empty_body", lang, example=example) if example
                         else text("errors.core_server_empty_body_docs", lang))
        elif kind == "missing":
            parts.append(text("errors.core_server_missing_field", lang, field=repr(where)))
        elif kind in _NOT_OBJECT and not loc:
            parts.append(text("errors.core_server_not_object", lang))
        elif kind == "invalid_unicode":
            problem = unicode_problem_msg(str(e.get("input")), from_bytes=False)  # the field's name as check_text's
            parts.append(Msg("errors.viewer_text_problem", what=word(where), problem=problem or e.get("msg")).render(lang))
        elif kind in _KEYED:
            key, bound = _KEYED[kind]
            parts.append(text(key, lang, field=where, bound=(e.get("ctx") or {}).get(bound),
                              value=shown(e.get("input"))))
        else:  # not reached by the request types above; pydantic's own words, in English
            parts.append(text("errors.core_server_invalid", lang, field=where, why=e.get("msg")))
    if not parts:
        return 422, text("errors.core_server_invalid_request", lang)
    return 422, reduce(lambda a, b: text("errors.core_server_parts", lang, a=a, b=b), parts)


#: Python's json reader's reasons for a body that is not JSON, as catalogue keys (said in --lang)
JSON_WHY = {"Expecting value": "errors.core_server_json_value", "Expecting ',' delimiter": "errors.core_server_json_comma",
            "Expecting ':' delimiter": "errors.core_server_json_colon",
            "Expecting property name enclosed in double quotes": "errors.core_server_json_name",
            "Unterminated string starting at": "errors.core_server_json_unterminated",
            "Invalid control character at": "errors.core_server_json_control",
            "Invalid \\escape": "errors.core_server_json_escape",
            "Invalid \\uXXXX escape": "errors.core_server_json_u_escape", "Extra data": "errors.core_server_json_extra",
            # newer Pythons (3.13/3.14 on) for a comma before } or ], where older ones expect a name or a value
            "Illegal trailing comma before end of object": "errors.core_server_json_comma_object",
            "Illegal trailing comma before end of array": "errors.core_server_json_comma_array"}


_NOT_OBJECT = ("model_attributes_type", "model_type", "dict_type")


def shown(value, most: int = 40) -> str:
    """A request's value as an error names it: JSON with its characters as sent (not \\uXXXX;
    a lone surrogate stays an escape, which no answer can carry), at most ``most`` characters, "…"
    marking a cut."""
    s = json.dumps(value, ensure_ascii=False).encode("utf-8", "backslashreplace").decode("utf-8")
    return s if len(s) <= most else s[:most - 1] + "…"


def _field(e: dict) -> list[str]:
    """The path of the field a validation error is about ([] for the body itself)."""
    return [str(x) for x in e.get("loc", ()) if x != "body"]


def is_json_type(content_type: str) -> bool:
    """application/json or any application/…+json, parameters aside (what FastAPI parses as JSON)."""
    main = content_type.split(";")[0].strip().lower()
    return main == "application/json" or (main.startswith("application/") and main.endswith("+json"))


def body_error_message(exc: BaseException, lang: str = "en") -> Optional[tuple[int, str]]:
    """(status, one sentence in ``lang``) for FastAPI's "There was an error parsing the body" when
    its cause is known: a body that is not UTF-8 (JSON must be; a Latin-1 "é" is the byte 0xe9), or
    one nested deeper than Python's JSON reader goes (about 1,000 levels of [ or {). None otherwise."""
    cause = exc.__cause__
    if isinstance(cause, RecursionError):
        return 400, text("errors.core_server_too_deep", lang, example=EXAMPLE_BODY)
    if isinstance(cause, UnicodeDecodeError):
        byte = cause.object[cause.start:cause.start + 1].hex()
        return 400, text("errors.core_server_not_utf8", lang, byte=byte, at=cause.start)
    return None
