"""Who may read the web app: the Host names it answers to (a page that rebinds its own name to
127.0.0.1 is refused, DNS rebinding), the Origin of a request made by another page, the token
(from the command line, the environment or a private file; compared in constant time, carried
in a cookie once the printed URL is opened) and the security headers of every response."""

from __future__ import annotations

import hmac
import ipaddress
import os
import re
import stat
from collections.abc import Iterable
from urllib.parse import urlencode, urlsplit

from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from xcsh_store.errors import XcshStoreError
from xcsh_store.files import open_regular_file

# No inline script or style anywhere: a session's text cannot run, whatever it holds.
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "content-security-policy": CONTENT_SECURITY_POLICY,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
    # Another site's page cannot even embed an image or a script of this server.
    "cross-origin-resource-policy": "same-origin",
}
# The cookie that keeps the token, one per port the server listens on (its name ends with
# it): a browser sends a cookie to every port of a host, and two servers on two ports would
# otherwise each overwrite the other's token, and be sent it.
TOKEN_COOKIE = "xcsh_store_token"
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
# A token is a line of text: a longer file is not a token file.
TOKEN_FILE_LIMIT = 4096

# A Host header as browsers send it: a DNS name or IPv4 address, or an IPv6 address in
# brackets, then an optional port. Anything else (user info, spaces, a path) is refused.
_HOST = re.compile(r"(?:\[(?P<ipv6>[0-9A-Fa-f:.]+)\]|(?P<name>[A-Za-z0-9._-]+))(?::[0-9]{1,5})?")


class TokenFileError(XcshStoreError):
    """A --token-file that cannot be used: missing, readable by others, empty."""


def host_name(value: str) -> str | None:
    """The host of a Host header (or of a name given to --host/--allow-host), as compared:
    lower case, an IPv6 address without brackets in its short form; None when malformed."""
    bare = value.strip()
    if bare.count(":") > 1 and not bare.startswith("["):
        bare = f"[{bare}]"  # a bare IPv6 address, as --host ::1 names it
    match = _HOST.fullmatch(bare)
    if match is None:
        return None
    if match["ipv6"] is None:
        return match["name"].lower()
    try:
        return ipaddress.IPv6Address(match["ipv6"]).compressed
    except ValueError:
        return None


def allowed_host_names(host: str, extra: Iterable[str] = ()) -> frozenset[str]:
    """The Host names the server answers to: loopback's, the address it listens on, and the
    names given; ValueError names one that is not a host name."""
    names = set()
    for value in (*LOOPBACK_NAMES, host, *extra):
        name = host_name(value)
        if name is None:
            raise ValueError(f"{value!r} is not a host name or address")
        names.add(name)
    return frozenset(names)


def beyond_loopback(hosts: frozenset[str]) -> bool:
    """Whether a server answering to the Host names ``hosts`` (``allowed_host_names``) answers
    a name that is not loopback's: an address others reach, or a name a proxy gives it, so that
    its pages may leave this machine."""
    return not hosts <= allowed_host_names(LOOPBACK_NAMES[0])


def token_cookie(scope: Scope) -> str:
    """The name of the token's cookie for the server ``scope`` came in on (its port)."""
    server = scope.get("server")
    return f"{TOKEN_COOKIE}_{server[1]}" if server and server[1] is not None else TOKEN_COOKIE


def read_token_file(path: str) -> str:
    """The token in ``path`` (its first line); refused when the file is readable or writable by
    anyone but its owner (a token others can read protects nothing)."""
    try:
        with open_regular_file(path) as handle:
            mode = os.fstat(handle.fileno()).st_mode
            data = handle.read(TOKEN_FILE_LIMIT + 1)
    except OSError as error:
        raise TokenFileError(f"Cannot read the token file {path}: {error.strerror}") from error
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise TokenFileError(
            f"The token file {path} is open to others (mode {stat.filemode(mode)}):"
            f" run `chmod 600 {path}`"
        )
    lines = data.decode("utf-8", "replace").splitlines()
    token = lines[0].strip() if lines else ""
    if len(data) > TOKEN_FILE_LIMIT or not token:
        raise TokenFileError(f"The token file {path} holds no token (one line of text)")
    return token


class Guard:
    """ASGI middleware, before every route: the Host name, the Origin of a request another
    page made, the token (when set); then the security headers on every response."""

    def __init__(self, app: ASGIApp, token: str | None, hosts: frozenset[str]) -> None:
        self.app = app
        self.token = token.encode() if token is not None else None
        self.hosts = hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"server"]
                headers += [(k.encode(), v.encode()) for k, v in SECURITY_HEADERS.items()]
                message["headers"] = headers
            await send(message)

        request = Request(scope)
        refusal = self._refusal(request)
        if refusal is not None:
            # A tiny body: nothing of the index reaches a client refused here.
            await PlainTextResponse(refusal[1], refusal[0])(scope, receive, with_headers)
        elif self.token is not None and "token" in request.query_params:
            await self._token_to_cookie(request)(scope, receive, with_headers)
        else:
            await self.app(scope, receive, with_headers)

    def _refusal(self, request: Request) -> tuple[int, str] | None:
        """(status, text) of a request refused, or None."""
        host = request.headers.get("host", "")
        if host_name(host) not in self.hosts:
            # A page that rebound its own name to this address: it names its own host.
            return 421, "This server does not answer to that host name (see serve --allow-host)."
        origin = request.headers.get("origin")
        if origin is not None and not self._same_origin(origin, host):
            return 403, "A page of another site cannot use this server."
        if self.token is not None and not self._has_token(request):
            return 401, "A token is needed: open the URL serve printed."
        return None

    @staticmethod
    def _same_origin(origin: str, host: str) -> bool:
        """Whether ``origin`` (the page that made the request) is this server as ``host`` names
        it; ``null`` (a sandboxed or local page) is not."""
        parts = urlsplit(origin)
        return parts.scheme in ("http", "https") and parts.netloc.lower() == host.lower()

    def _has_token(self, request: Request) -> bool:
        assert self.token is not None
        offered = (
            request.query_params.get("token")
            or request.cookies.get(token_cookie(request.scope))
            or request.headers.get("authorization", "").removeprefix("Bearer ").strip()
        )
        return hmac.compare_digest(offered.encode("utf-8", "replace"), self.token)

    def _token_to_cookie(self, request: Request) -> RedirectResponse:
        """The same page without ``?token=``: the token moves into a cookie, out of the address
        bar, the history and any log of URLs."""
        kept = [(key, value) for key, value in request.query_params.multi_items() if key != "token"]
        path = request.scope.get("raw_path", b"").decode("latin-1") or request.url.path
        target = "/" + path.lstrip("/")  # never //host: a path on this server only
        response = RedirectResponse(target + (f"?{urlencode(kept)}" if kept else ""), 303)
        assert self.token is not None
        response.set_cookie(
            token_cookie(request.scope),
            self.token.decode(),
            path="/",
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
        )
        return response
