"""OpenAPI specs as tools: `OpenApiToolset` makes one `RestApiTool` per operation of an
OpenAPI 3.0 / 3.1 or Swagger 2.0 spec, sending requests exactly as the spec says."""

from toolsets.openapi._cache import HttpCache
from toolsets.openapi._checking import ValidationProgress
from toolsets.openapi._model import Body, Encoding, MediaType, Operation, Parameter, Server
from toolsets.openapi._oauth import AuthorizationCodeFlow, ClientAuthMethod, ClientCredentials
from toolsets.openapi._operations import Spec
from toolsets.openapi._returns import SuccessResponse
from toolsets.openapi._security import Credentials
from toolsets.openapi._select import select_operations
from toolsets.openapi._tool import RestApiTool
from toolsets.openapi._toolset import OpenApiToolset

__all__ = [
    "AuthorizationCodeFlow",
    "Body",
    "ClientAuthMethod",
    "ClientCredentials",
    "Credentials",
    "Encoding",
    "HttpCache",
    "MediaType",
    "OpenApiToolset",
    "Operation",
    "Parameter",
    "RestApiTool",
    "Server",
    "Spec",
    "SuccessResponse",
    "ValidationProgress",
    "select_operations",
]
