"""Sign in and sign out: the password goes to the application's `login`, the token into an HttpOnly cookie."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from api.http import logins
from api.http.routes import common as c
from api.http.ui import render, session
from api.http.ui.core import Refused, error_page, form, refusal, safe_next
from domain.app.errors import LoginRefused

PRE_SESSION_SECONDS = 3600
WRONG = "Unknown username or wrong password."


def login_form(request: Request, message: str = "", username: str = "", status_code: int = 200) -> Response:
    """The form, with a CSRF token bound to a fresh pre-session cookie (or the one the browser already has)."""
    pre = request.cookies.get(session.PRE_SESSION) or session.new_pre_session()
    shown = render.Html(render.macro("alert")(message, "error", "login-error") if message else "")
    body = render.fill("login", csrf=render.hidden_csrf(session.csrf_token(request, pre)), message=shown,
                       username=username, next=request.query_params.get("next", ""))
    answer = render.page("Sign in", body, status_code=status_code)
    session.set_cookie(answer, request, session.PRE_SESSION, pre, PRE_SESSION_SECONDS)
    return answer


async def show(request: Request) -> Response:
    if session.principal_from_cookie(request) is not None:
        return RedirectResponse(safe_next(request.query_params.get("next")), status_code=303)
    return login_form(request)


async def sign_in(request: Request) -> Response:
    """A form token, when sent, must be this browser's; a browser's cross-site post is refused either way."""
    try:
        fields = await form(request)
    except Exception as error:  # noqa: BLE001 - refusal() re-raises what is not a refusal
        return error_page(request, refusal(error), None)
    given = fields.get(session.CSRF_FIELD)
    forged = given is not None and not session.csrf_ok(request, given, request.cookies.get(session.PRE_SESSION))
    if forged or session.cross_site(request):
        return login_form(request, "This sign-in form is stale or came from another site; try again.",
                          status_code=403)
    username, password = fields.get("username", "").strip(), fields.get("password", "")
    missing = [name for name, value in (("username", username), ("password", password)) if not value]
    if missing:
        return login_form(request, f"Enter your {' and '.join(missing)}.", username, status_code=400)
    try:
        user = await logins.gate(request).check(username, logins.address_of(request),
                                                request.app.state.services.roving.login, username, password, c.now())
    except logins.TooManyLogins as error:
        answer = login_form(request, f"{error.reason[:1].upper()}{error.reason[1:]} (try again in {error.retry_after} s).",
                            username, status_code=error.status)
        answer.headers["Retry-After"] = str(error.retry_after)
        return answer
    except LoginRefused as error:
        said = str(error)  # a locked account says so and until when; anything else is the one sentence
        message = f"{said[:1].upper()}{said[1:]}." if "lock" in said else WRONG
        return login_form(request, message, username, status_code=401)
    token, seconds = session.issue_session(request, user)
    answer = RedirectResponse(safe_next(fields.get("next")), status_code=303)
    session.set_cookie(answer, request, session.COOKIE, token, seconds)
    session.clear_cookie(answer, request, session.PRE_SESSION)
    return answer


async def sign_out(request: Request) -> Response:
    token = session.session_token(request)
    try:
        fields = await form(request)
    except Refused as error:
        return error_page(request, error, None)
    if token is not None and not session.csrf_ok(request, fields.get(session.CSRF_FIELD, ""), token):
        return error_page(request, Refused(403, "This form's CSRF token is missing or stale; reload and try again."),
                          None)
    answer = RedirectResponse("/ui/", status_code=303)
    session.clear_cookie(answer, request)
    return answer
