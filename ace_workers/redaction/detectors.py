"""The detectors of each kind: where in a string a secret, an e-mail address, a card number... is.

Credentials are found by the regex plugins of Yelp's detect-secrets (AWS, GitHub, GitLab, Slack,
Stripe, JWT, passwords in URLs, ...) and a few patterns of ours for what it does not know (``sk-``
keys, bearer tokens, whole PEM private keys, ``password=...`` assignments keyed by its keyword
list). Phone numbers are Google's libphonenumber's (the ``phonenumbers`` port). E-mail, card,
IBAN and IP patterns are regexes checked the way Presidio's recognizers check them (Luhn for
cards, mod-97 for IBANs, ``ipaddress`` for IPs). docs/redaction.md says why not Presidio itself.
"""

from __future__ import annotations

import functools
import ipaddress
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from .spec import REDACT_GROUP, RedactionSpec

__all__ = ["Detector", "build_detectors", "keyword_pattern", "luhn_valid", "secret_key_pattern"]

Span = tuple[int, int]


@dataclass(frozen=True)
class Detector:
    """One kind's finder: the spans to replace in a string, and the key that numbers equal values alike."""

    kind: str
    find: Callable[[str], Iterator[Span]]
    key: Callable[[str], str] = str


# --- credentials -------------------------------------------------------------------------------

# detect-secrets' regex plugins that are specific and cheap (a literal prefix each). Left out:
# the keyword-and-lookbehind ones (Cloudant, IBM, SoftLayer: 0.2-0.35 ms each on 4 KB), the
# loose Artifactory one (words such as "APPLICATION1"), the public-IP one (the ipv4 kind) and
# the high-entropy ones (hashes and ids everywhere in a trace).
# Each with the lower-case substrings one of which every match holds: its regexes run only on a
# text holding one (several start with a character class, and cost 0.1-0.2 ms per 4 KB each).
_PLUGINS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("aws.AWSKeyDetector", ("a3t", "abia", "acca", "akia", "asia", "aws")),
    ("azure_storage_key.AzureStorageKeyDetector", ("accountkey=",)),
    ("basic_auth.BasicAuthDetector", ("://",)),
    ("discord.DiscordBotTokenDetector", (".",)),
    ("github_token.GitHubTokenDetector", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")),
    ("gitlab_token.GitLabTokenDetector", ("gl", "gr1348941")),
    ("jwt.JwtTokenDetector", ("eyj",)),
    ("mailchimp.MailchimpDetector", ("-us",)),
    ("npm.NpmDetector", ("_authtoken",)),
    ("openai.OpenAIDetector", ("t3blbkfj",)),
    ("private_key.PrivateKeyDetector", ("private key", "putty")),
    ("pypi_token.PypiTokenDetector", ("pypi-",)),
    ("sendgrid.SendGridDetector", ("sg.",)),
    ("slack.SlackDetector", ("xox", "hooks.slack.com")),
    ("square_oauth.SquareOAuthDetector", ("sq0csp-",)),
    ("stripe.StripeDetector", ("k_live_",)),
    ("telegram_token.TelegramBotTokenDetector", (":",)),
    ("twilio.TwilioKeyDetector", ("ac", "sk")),
)
# Plugins whose group 1 is the secret itself (the rest of the match is context: a URL's user,
# "aws_secret_key = "): only the group is replaced, so the reader still sees what it was.
_SECRET_IN_GROUP_ONE = frozenset({"BasicAuthDetector", "NpmDetector", "AWSKeyDetector"})

# What detect-secrets does not know: (a substring every match holds, regex, group replaced). A
# regex runs only on text holding its substring, and none starts with a look-behind (which would
# stop the engine from skipping ahead to its literal start); _our_secrets checks the word boundary.
_OUR_SECRETS = tuple(
    (trigger, re.compile(regex), group)
    for trigger, regex, group in (
        # A whole PEM private key, header to footer (detect-secrets finds the header line only);
        # one cut short in the trace runs to the end of the string.
        (
            "PRIVATE KEY",
            r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY[A-Z ]*-----[\s\S]*?"
            r"(?:-----END[A-Z0-9 ]*PRIVATE KEY[A-Z ]*-----|\Z)",
            0,
        ),
        # OpenAI (sk-proj-...), Anthropic (sk-ant-...) and look-alike keys (sk-live-...).
        ("sk-", r"sk-[A-Za-z0-9_-]{20,}", 0),
        ("github_pat_", r"github_pat_[A-Za-z0-9_]{22,}", 0),
        ("hf_", r"hf_[A-Za-z0-9]{30,}", 0),
        ("AIza", r"AIza[0-9A-Za-z_-]{35}", 0),
        # ace-workers' own API keys (ace-workers key create).
        ("ace_", r"ace_[0-9a-f]{8,32}_[A-Za-z0-9_-]{20,200}", 0),
        ("earer", r"[Bb]earer\s+([A-Za-z0-9._~+/-]{16,}=*)", 1),
        ("EARER", r"BEARER\s+([A-Za-z0-9._~+/-]{16,}=*)", 1),
    )
)
# ``password: hunter2``, ``api_key="..."``: a value after one of detect-secrets' keywords, matched
# in the lower-cased text (an (?i) regex cannot skip ahead to its possible first letters).
_ASSIGNMENT = r"(?:{keywords})[\w-]*[\"']?\s*[:=]\s*[\"']?(?P<redact>[^\s\"',;<>]{{4,}})"
# Substrings every keyword of detect-secrets' list holds one of: a string with none is not searched.
_KEYWORD_STEMS = ("key", "pass", "pwd", "secret", "contrase")


def _plugin_patterns() -> list[tuple[tuple[str, ...], re.Pattern[str], bool]]:
    """(triggers, regex, whether group 1 is the secret) of each chosen detect-secrets plugin."""
    import importlib

    patterns = []
    for path, triggers in _PLUGINS:
        module_name, _, class_name = path.rpartition(".")
        module = importlib.import_module(f"detect_secrets.plugins.{module_name}")
        plugin: Any = getattr(module, class_name)
        for regex in plugin.denylist:
            patterns.append((triggers, regex, class_name in _SECRET_IN_GROUP_ONE and regex.groups > 0))
    return patterns


def _keywords() -> str:
    """detect-secrets' credential keywords (``password``, ``api_?key``, ``secret``...) as one alternation."""
    from detect_secrets.plugins.keyword import DENYLIST

    return "|".join(DENYLIST)


def keyword_pattern() -> re.Pattern[str]:
    """A value assigned to one of detect-secrets' keywords: ``password: hunter2``, ``api_key="..."``."""
    return re.compile(_ASSIGNMENT.format(keywords=_keywords()))


def secret_key_pattern() -> re.Pattern[str]:
    """A JSON object key naming a credential (``password``, ``db_pass``, ``x-api-key``): its value goes."""
    return re.compile(rf"(?i)^[\w-]*(?:{_keywords()})[\w-]*$")


def _our_secrets(text: str) -> Iterator[Span]:
    for trigger, regex, group in _OUR_SECRETS:
        if trigger not in text:
            continue
        for match in regex.finditer(text):
            start = match.start()
            if start and (text[start - 1].isalnum() or text[start - 1] in "_-") and not group:
                continue  # the end of a longer word ("task-..." is no sk- key)
            yield match.span(group)


def _assignments(text: str, lowered: str, assignment: re.Pattern[str]) -> Iterator[Span]:
    if not any(stem in lowered for stem in _KEYWORD_STEMS):
        return
    if len(lowered) != len(text):  # a character whose lower case is longer: positions would shift
        lowered = text
        assignment = re.compile(assignment.pattern, re.IGNORECASE)
    yield from (_span(match) for match in assignment.finditer(lowered))


def _secret_detector() -> Detector:
    plugins = _plugin_patterns()
    assignment = keyword_pattern()

    def find(text: str) -> Iterator[Span]:
        yield from _our_secrets(text)
        lowered = text.lower()
        yield from _assignments(text, lowered, assignment)
        for triggers, regex, group_one in plugins:
            if any(trigger in lowered for trigger in triggers):
                yield from (_span(match, group_one) for match in regex.finditer(text))

    return Detector("secret", find)


def _span(match: re.Match[str], group_one: bool = False) -> Span:
    """The part of ``match`` to replace: group 1, the ``redact`` group, or the whole match."""
    if group_one and match.group(1):
        return match.span(1)
    if REDACT_GROUP in match.re.groupindex and match.group(REDACT_GROUP):
        return match.span(REDACT_GROUP)
    return match.span()


# --- personal data -----------------------------------------------------------------------------

# No pattern starts with a look-behind: the regex engine then skips ahead to the characters a
# match can start with, instead of trying every position (ten times faster on 4 KB). What may
# not come before a match is checked in _preceded_by instead.
# An address is found from its "@": the local part before it, the domain after.
_EMAIL_LOCAL = re.compile(r"[\w.%+-]{1,64}$")
_EMAIL_DOMAIN = re.compile(r"@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}(?![\w-])")
# 13 to 19 digits with optional single spaces or dashes, of a card network's first digit (2-6):
# a millisecond timestamp (starting with 1) is not read as a card. Luhn decides.
_CARD = re.compile(r"[2-6](?:[ -]?\d){12,18}(?!\d)")
_IBAN = re.compile(r"[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}\b")
_IPV4 = re.compile(r"(?:\d{1,3}\.){3}\d{1,3}(?![\d.])")
_IPV6 = re.compile(r"(?:[0-9A-Fa-f]{1,4}:|:){2,7}(?::|[0-9A-Fa-f]{1,4})(?![\w:])")
# What may be a phone number: written with + and a country code, or nationally in groups split
# by spaces, dots or dashes ("(415) 555-2671", "020 7946 0958"). A bare run of digits is not one:
# a trace is full of ids and timestamps, and libphonenumber's check costs some 0.3 ms a candidate.
_PHONE_CANDIDATE = re.compile(
    r"(?:\+\d[\d ().-]{5,20}\d|\(?\d{2,5}\)?[ .-]\d{2,4}[ .-]\d{3,4}(?:[ .-]\d{2,4})?)(?!\w)"
)
# The characters that may not come right before a match of each (it would be part of a longer token).
_NOT_BEFORE = {
    _CARD: "-",
    _IBAN: "",
    _IPV4: ".",
    _IPV6: ":",
    _PHONE_CANDIDATE: "+",
}


def _matches(regex: re.Pattern[str], text: str) -> Iterator[re.Match[str]]:
    """``regex``'s matches in ``text`` not preceded by a word character or one of its _NOT_BEFORE."""
    banned = _NOT_BEFORE[regex]
    for match in regex.finditer(text):
        start = match.start()
        if start and (text[start - 1].isalnum() or text[start - 1] == "_" or text[start - 1] in banned):
            continue
        yield match


def _digits(text: str) -> str:
    return "".join(char for char in text if char.isdigit())


def luhn_valid(digits: str) -> bool:
    """True when ``digits`` pass the Luhn check card numbers carry."""
    total = 0
    for position, char in enumerate(reversed(digits)):
        value = int(char)
        if position % 2:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


def _iban_valid(text: str) -> bool:
    compact = text.replace(" ", "")
    rearranged = compact[4:] + compact[:4]
    number = "".join(str(int(char, 36)) for char in rearranged)
    return 15 <= len(compact) <= 34 and int(number) % 97 == 1


def _ip_valid(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def _checked(
    kind: str, regex: re.Pattern[str], valid: Callable[[str], bool], key: Callable[[str], str]
) -> Detector:
    def find(text: str) -> Iterator[Span]:
        for match in _matches(regex, text):
            if valid(match.group()):
                yield match.span()

    return Detector(kind, find, key)


def _email_detector() -> Detector:
    def find(text: str) -> Iterator[Span]:
        at = text.find("@")
        while at != -1:  # most strings have none: nothing is searched in them
            domain = _EMAIL_DOMAIN.match(text, at)
            local = _EMAIL_LOCAL.search(text, max(0, at - 64), at) if domain else None
            if domain and local:
                yield local.start(), domain.end()
            at = text.find("@", at + 1)

    return Detector("email", find, str.lower)


def _card_valid(text: str) -> bool:
    digits = _digits(text)
    return 13 <= len(digits) <= 19 and len(set(digits)) > 1 and luhn_valid(digits)


def _phone_detector(region: str) -> Detector:
    def find(text: str) -> Iterator[Span]:
        for match in _matches(_PHONE_CANDIDATE, text):
            if phone_number(match.group(), region) is not None:
                yield match.span()

    return Detector("phone", find, lambda text: phone_number(text, region) or text)


@functools.lru_cache(maxsize=4096)
def phone_number(text: str, region: str) -> str | None:
    """``text`` as an E.164 number if libphonenumber finds it a valid one (national ones in ``region``)."""
    import phonenumbers

    if not 7 <= len(_digits(text)) <= 15:
        return None
    try:
        number = phonenumbers.parse(text, region)
    except phonenumbers.NumberParseException:
        return None
    if not phonenumbers.is_valid_number(number):
        return None
    return str(phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.E164))


def custom_detector(name: str, regex: re.Pattern[str]) -> Detector:
    """The detector of a custom kind: its regex's matches (its ``redact`` group, if it has one)."""

    def find(text: str) -> Iterator[Span]:
        for match in regex.finditer(text):
            start, end = _span(match)
            if end > start:
                yield start, end

    return Detector(name.upper(), find)


_BUILDERS: dict[str, Callable[[RedactionSpec], Detector]] = {
    "secret": lambda spec: _secret_detector(),
    "email": lambda spec: _email_detector(),
    "card": lambda spec: _checked("card", _CARD, _card_valid, _digits),
    "iban": lambda spec: _checked("iban", _IBAN, _iban_valid, lambda text: text.replace(" ", "")),
    "ipv4": lambda spec: _checked("ipv4", _IPV4, _ip_valid, str),
    "ipv6": lambda spec: _checked("ipv6", _IPV6, _ip_valid, str.lower),
    "phone": lambda spec: _phone_detector(spec.phone_region),
}


def build_detectors(spec: RedactionSpec) -> list[Detector]:
    """The detectors of ``spec``, in the order they run: custom kinds first, then KINDS' order."""
    custom = [custom_detector(pattern.name, pattern.compiled) for pattern in spec.custom]
    return [*custom, *(_BUILDERS[kind](spec) for kind in spec.kinds)]
