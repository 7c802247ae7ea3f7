"""One test per class of miss and of damage that the detectors' own test data showed (issue 26),
with this project's own examples: every secret is gone, and every character around it is
exactly as it was; every look-alike is left unchanged."""

from __future__ import annotations

import json
import re

import pytest
from bashgym_scrubbers_secrets import PLACEHOLDER_RE, Redactor
from bashgym_scrubbers_secrets.prefilter import available
from secrets_corpus import ALNUM, HEX, LOWER_ALNUM, UPPER_ALNUM, URLSAFE, tok

MIXED = tok("shapes-mixed", 32)  # a key as most providers issue them
LOWER = tok("shapes-lower", 30, LOWER_ALNUM)
_HEX48 = tok("shapes-hex", 48, HEX)


def assert_redacted(text: str, *secrets: str, backend: str | None = None) -> str:
    """`text` scrubbed: each of `secrets` (every occurrence) replaced by one placeholder, and
    the text around them unchanged."""
    out = Redactor(backend=backend).text(text)
    pattern = re.escape(text)
    for secret in secrets:
        pattern = pattern.replace(re.escape(secret), PLACEHOLDER_RE.pattern)
    assert re.fullmatch(pattern, out), (text, out)
    for secret in secrets:
        assert secret not in out
    return out


# ---- the same value again --------------------------------------------------------------------


def test_a_secret_repeated_in_a_string_is_redacted_at_every_occurrence():
    text = f"export DB_PASSWORD={MIXED}\necho connecting with {MIXED} now"
    assert_redacted(text, MIXED)


def test_a_repeat_inside_an_allowed_string_stays():
    text = f"API_KEY={MIXED}\nfixture {MIXED}"
    out = Redactor(allow=[f"fixture {MIXED}"]).text(text)
    assert out == f"API_KEY=[REDACTED:secret]\nfixture {MIXED}"


def test_a_secret_repeated_in_another_json_literal_is_redacted_there_too():
    doc = json.dumps(
        {
            "messages": [
                {"role": "tool", "content": f"api_key = {MIXED}"},
                {"role": "assistant", "content": f"I will use {MIXED} for the call."},
            ]
        }
    )
    out = Redactor().text(doc)
    assert MIXED not in out
    assert json.loads(out)["messages"][1]["content"].startswith("I will use [REDACTED:")


# ---- assignment shapes ---------------------------------------------------------------------

SHAPES = {
    "make-conditional": (f'DEPLOY_TOKEN ?= "{MIXED}"', MIXED),
    "make-shell": (f'DEPLOY_TOKEN ::= "{MIXED}"', MIXED),
    "make-evaluated": (f'DEPLOY_TOKEN :::= "{MIXED}"', MIXED),
    "go-typed-var": (f'var deployToken string = "{MIXED}"', MIXED),
    "php-append": (f'$deployToken .= "{MIXED}";', MIXED),
    "xml-own-line": (f"<deployToken>\n    {MIXED}\n</deployToken>", MIXED),
    "key-colon-no-space": (f'DEPLOY_TOKEN:"{MIXED}"', MIXED),
    "name-dash-value": (f"deploy_token - '{MIXED}'", MIXED),
    "curl-user": (f"curl -u ci-bot:{LOWER}x9 https://ci.example.org/api", f"{LOWER}x9"),
    "curl-user-continued": (
        f"curl -X POST https://ci.example.org/api \\\n  -d 'x=1' \\\n  --user ci:'{MIXED}'",
        MIXED,
    ),
    "curl-apikey-header": (
        f'curl -H "apikey: 5d1c0a2e-7b43-4f7e-9c55-{HEX[:12]}" https://x.example.org',
        f"5d1c0a2e-7b43-4f7e-9c55-{HEX[:12]}",
    ),
    "yaml-binary": (f"deploy_token: !!binary {MIXED}\nretries: 3", MIXED),
    "ini-continuation": (f"[smtp]\npassword =\n    {MIXED}\nport = 587", MIXED),
    "set-property": (f'System.setProperty("DEPLOY_TOKEN", "{LOWER}")', LOWER),
    "reversed-comparison": (f'if ("{MIXED}" == admin_password) {{', MIXED),
    # a PASS named for whose it is, more words after (`db_pass_secure`)
    "owned-pass-word": (f"smtp_pass_primary := {MIXED}", MIXED),
    # a bare value with `>`/`<` inside it: redacted whole, no tail left behind
    "bare-value-with-angle": ("backup_passwd = Wq7>rT2<9xZ!m#;", "Wq7>rT2<9xZ!m#"),
    "bare-value-then-redirect": (f"run --db-password={MIXED}>/dev/null 2>&1", MIXED),
    # `name:value` with no space and a hex key under a qualified name
    "tight-hex-key": (f"billing_api_key:{_HEX48}", _HEX48),
    # a quoted name/value call holding a long number or random letters
    "set-property-numeric": (
        'props.put("CHAT_BOT_TOKEN", "480213579911046628");',
        "480213579911046628",
    ),
    "set-property-letters": ('setenv("LOG_TOKEN", "qWmZpXrTbNcVyKhL");', "qWmZpXrTbNcVyKhL"),
    # Bundler's per-host credentials: the name holds no secret word
    "bundler-host-credentials": (
        f'export BUNDLE_PKGS__EXAMPLE__IO="ci-bot:{LOWER[:16]}"',
        f"ci-bot:{LOWER[:16]}",
    ),
    # Python string prefixes: the literal after `f`, `b` or `u` is the value
    "python-f-string": (f'deploy_token = f"{MIXED}"', MIXED),
    "python-bytes": (f"app.secret_key = b'{MIXED}'", MIXED),
    "header-in-f-string": (f'headers = {{"Authorization": f"token {MIXED}"}}', MIXED),
    # a password piped into the command that reads it
    "echo-to-sudo": (
        f"ssh ci@10.0.0.5 'echo {MIXED[:18]} | sudo -S systemctl restart app'",
        MIXED[:18],
    ),
    "echo-to-password-stdin": (
        f"echo '{MIXED}' | docker login ghcr.io -u ci --password-stdin",
        MIXED,
    ),
    "printf-to-sudo": (f"printf '%s\\n' '{MIXED[:14]}' | sudo -S true", MIXED[:14]),
    # a token as a positional argument, and NAME VALUE settings with no `=`
    "ngrok-authtoken": (
        f"ngrok config add-authtoken {MIXED}_{LOWER[:12]}",
        f"{MIXED}_{LOWER[:12]}",
    ),
    "windows-setx": (f"setx DEPLOY_TOKEN {MIXED}", MIXED),
    "fish-set-export": (f"set -gx DB_PASSWORD {MIXED[:16]}", MIXED[:16]),
    "csh-setenv": (f"setenv API_TOKEN {LOWER}", LOWER),
    # HTTP basic auth written in code
    "requests-auth-tuple": (f'requests.get(url, auth=("ci-bot", "{MIXED[:14]}"))', MIXED[:14]),
    "basic-auth-class": (f"HTTPBasicAuth('ci-bot', '{MIXED[:14]}')", MIXED[:14]),
    # admin tools that take the password as an argument or a one-letter flag
    "gh-secret-body": (f'gh secret set DEPLOY_KEY --body "{MIXED}"', MIXED),
    "aws-configure-set": (f"aws configure set profile.ci.aws_secret_access_key {MIXED}", MIXED),
    "htpasswd-batch": (f"htpasswd -b -c /etc/nginx/.htpasswd admin {MIXED[:14]}", MIXED[:14]),
    "zip-password": (f"zip -P {MIXED[:14]} backup.zip dump.sql", MIXED[:14]),
    "7z-password": (f"7z a -p{MIXED[:14]} backup.7z data", MIXED[:14]),
    "mongosh-password": (
        f"mongosh -u admin -p {MIXED[:14]} --authenticationDatabase admin",
        MIXED[:14],
    ),
    "sqlcmd-password": (f"sqlcmd -S localhost -U sa -P '{MIXED[:14]}' -Q 'SELECT 1'", MIXED[:14]),
    "ldap-bind-password": (f"ldapsearch -x -D cn=admin,dc=ex -w {MIXED[:14]} -b dc=ex", MIXED[:14]),
    "smbclient-user-password": (f"smbclient //fs/share -U admin%{MIXED[:14]}", MIXED[:14]),
    "net-user-add": (f"net user deploy {MIXED[:14]} /add", MIXED[:14]),
    "passwd-stdin": (f'echo "{MIXED[:14]}" | passwd --stdin deploy', MIXED[:14]),
    "chpasswd": (f"echo 'deploy:{MIXED[:14]}' | sudo chpasswd", MIXED[:14]),
    "openssl-passwd": (f"useradd -p $(openssl passwd -6 {MIXED[:14]}) deploy", MIXED[:14]),
    "rabbitmq-add-user": (f"rabbitmqctl add_user admin {MIXED[:14]}", MIXED[:14]),
    "mysqladmin-password": (f"mysqladmin -u root password '{MIXED[:14]}'", MIXED[:14]),
    "redis-requirepass": (f"requirepass {MIXED[:20]}", MIXED[:20]),
    "redis-masterauth": (f"masterauth {LOWER[:20]}", LOWER[:20]),
    "minio-alias": (f"mc alias set local http://localhost:9000 admin {MIXED[:16]}", MIXED[:16]),
    "sql-identified-by": (f"CREATE USER 'app'@'%' IDENTIFIED BY '{MIXED[:14]}';", MIXED[:14]),
    # a default value under a secret's name, in code and in Terraform
    "getenv-default": (f'API_KEY = os.getenv("API_KEY", "{MIXED}")', MIXED),
    "terraform-variable-default": (
        f'variable "db_password" {{\n  type    = string\n  default = "{MIXED[:16]}"\n}}',
        MIXED[:16],
    ),
    # C's #define, setters and builders, quoted fallbacks, Java's XML properties
    "c-define": (f'#define API_KEY "{MIXED}"', MIXED),
    "java-setter": (f'ds.setPassword("{MIXED[:14]}");', MIXED[:14]),
    "sdk-setter": (f'client.setApiKey("{MIXED}");', MIXED),
    "builder-method": (f'Client.builder().apiKey("{MIXED}").build()', MIXED),
    "nullish-fallback": (f'const token = process.env.TOKEN ?? "{MIXED}";', MIXED),
    "or-fallback": (f"const apiKey = process.env.API_KEY || '{MIXED}';", MIXED),
    "xml-properties-entry": (f'<entry key="password">{MIXED[:14]}</entry>', MIXED[:14]),
    # session cookies: whoever holds one is logged in
    "cookie-header": (f"Cookie: _ga=GA1.2.1.17; sessionid={MIXED}; theme=dark", MIXED),
    "set-cookie": (f"Set-Cookie: session={MIXED}; HttpOnly; Path=/", MIXED),
    "curl-cookie": (f'curl --cookie "connect.sid=s%3A{MIXED}" https://app', f"s%3A{MIXED}"),
}

# ~/.pgpass lines (`host:port:database:user:password`): echoed into the file, the file's own
# lines (`cat ~/.pgpass`), a Write tool's arguments, a `\:` escape, wildcards
_PGPASS = tok("pgpass", 20, ALNUM + "!#%+")
SHAPES["pgpass-echo"] = (
    f"echo 'warehouse.corp.example:5432:billing:svc_app:{_PGPASS}' >> ~/.pgpass",
    _PGPASS,
)
SHAPES["pgpass-cat-output"] = (f"$ cat ~/.pgpass\n10.20.0.7:6432:*:report_ro:{_PGPASS}\n", _PGPASS)
SHAPES["pgpass-wildcards"] = (f"*:*:*:backup:{_PGPASS}", _PGPASS)
SHAPES["pgpass-escaped-colon"] = (
    f"localhost:5432:app:app:{_PGPASS[:8]}\\:{_PGPASS[8:]}",
    f"{_PGPASS[:8]}\\:{_PGPASS[8:]}",
)
SHAPES["pgpass-write-tool"] = (
    json.dumps(
        {"file_path": "/home/dev/.pgpass", "content": f"db-7.internal:5433:app:app:{_PGPASS}\n"}
    ),
    _PGPASS,
)
# `wandb login KEY`: a W&B API key is 40 hex digits, a secret only by the command before it
_WANDB = tok("wandb", 40, HEX)
SHAPES["wandb-login"] = (f"wandb login {_WANDB}", _WANDB)
SHAPES["wandb-login-flags"] = (
    f"wandb login --relogin --host https://wandb.corp.example '{_WANDB}' && python train.py",
    _WANDB,
)

# A password of letters only whose case changes like a token's but leaves only two one- or
# two-letter runs (nwv Sf ZUKEC Whk Tb Yoi): six "words" in 18 letters is no CamelCase name
_LETTERS = "nwvSfZUKECWhkTbYoi"
SHAPES["letters-only-password-env"] = (f"PGPASSWORD={_LETTERS} psql -h db -U app", _LETTERS)
SHAPES["letters-only-password-yaml"] = (f'password: "{_LETTERS}"', _LETTERS)


@pytest.mark.parametrize("shape", SHAPES)
def test_assignment_shape(shape):
    text, secret = SHAPES[shape]
    assert_redacted(text, secret)


# ---- values that are tokens though they look like words, numbers or names ----------------------

VALUES = {
    # one case, with separators: random segments, not words
    "lower-with-separators": f"beamer_token = b_7=u{LOWER[:9]}_5oj=a0{LOWER[9:20]}",
    "upper-with-dashes": "ONEPASS_SECRET = A3-7KQ2ZD-X8W3M2NQ4RT-9F2KD-P6S7T-Q2W8E",
    "uuid-under-key-name": 'hubspot_api_key = "d7a3c1a8-5a90-4d2f-9260-f8be576cd8a4"',
    # numbers: a long numeric id issued as a credential
    "numeric-client-secret": 'discord_client_secret = "759786491092164957622570868245"',
    # unquoted, looks like snake_case until its parts are read
    "snake-looking": f"gocardless_token: live_r{LOWER[:6]}_6{LOWER[6:20]}_u{LOWER[20:]}",
    # letters only, but with a token's case changes
    "random-letters": 'SUMO_ACCESS_TOKEN = "sueqICtbUsqOzXkPw"',
}


@pytest.mark.parametrize("name", VALUES)
def test_token_shaped_value_under_a_secret_name(name):
    text = VALUES[name]
    sep = re.search(r"\s*(?:=|:|:=)\s*\"?", text)
    assert sep is not None
    value = text[sep.end() :].rstrip('"')
    assert_redacted(text, value)


# ---- token formats found by their own shape ----------------------------------------------------

_SGP = tok("sgp", 40, HEX + "ABCDEF")
_EZAK = tok("ezak", 54)
_OC = tok("oc", 43)
_JENKINS = "{AQAAABAAAAAQ" + tok("jenkins", 40) + "=}"
TOKENS = {
    "sourcegraph": (f"SRC_ACCESS_TOKEN set; using sgp_{_SGP} for the search", f"sgp_{_SGP}"),
    "easypost": (f"client = easypost.Client('EZAK{_EZAK}')", f"EZAK{_EZAK}"),
    "openshift": (f"oc login --token=sha256~{_OC} --server=https://api.x:6443", f"sha256~{_OC}"),
    "jenkins": (f"<privateKey>{_JENKINS}</privateKey>", _JENKINS),
    "slack-webhook-http": (
        f"curl -X POST http://hooks.slack.com/services/T0{UPPER_ALNUM[:7]}/B0{MIXED[:20]}",
        f"hooks.slack.com/services/T0{UPPER_ALNUM[:7]}/B0{MIXED[:20]}",
    ),
    "slack-webhook-lowercase": (
        f"webhook: https://hooks.slack.com/services/{LOWER}{LOWER[:10]}",
        f"hooks.slack.com/services/{LOWER}{LOWER[:10]}",
    ),
}


_SL = tok("softlayer", 64, LOWER_ALNUM)
_SENTRY = tok("sentry-user", 64, HEX.lower())
_P8E = tok("p8e", 32)
TOKENS["adobe-client-secret"] = (f'ADOBE = {{"secret": "p8e-{_P8E}"}}', f"p8e-{_P8E}")
_XOXE = "-".join(tok(f"team{i}", 12, "0123456789") for i in range(3)) + "-" + tok("xoxe", 32, HEX)
TOKENS["slack-refresh-token"] = (f"files.example/img.png?t=xoxe-{_XOXE}&x=1", f"xoxe-{_XOXE}")
TOKENS["softlayer-url"] = (f"GET https://api.softlayer.com/rest/v3.1/{_SL}/Account", _SL)
TOKENS["sentry-user-token"] = (f"SENTRY_AUTH_TOKEN set: sntryu_{_SENTRY} ok", f"sntryu_{_SENTRY}")
# a token as a URL's user with no password: a Sentry DSN's key, a token in a clone URL
_DSN_KEY = tok("dsn-key", 32, HEX.lower())
_CLONE_TOKEN = tok("clone-token", 40, HEX.lower())
TOKENS["sentry-dsn"] = (f"SENTRY_DSN='https://{_DSN_KEY}@o4507.ingest.sentry.io/45'", _DSN_KEY)
TOKENS["token-as-url-user"] = (
    f"git clone https://{_CLONE_TOKEN}@github.com/org/app.git", _CLONE_TOKEN
)  # fmt: skip


@pytest.mark.parametrize("name", TOKENS)
def test_token_format(name):
    text, secret = TOKENS[name]
    assert_redacted(text, secret)


def test_kubernetes_secret_data_values_whatever_their_keys():
    blob = "eyJhdXRocyI6eyJyZWdpc3RyeS5leGFtcGxlIjp7ImF1dGgiOiJZV1J0YVc0NmN6TmpjbVYwIn19fQ=="
    text = (
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: registry\ntype: Opaque\ndata:\n"
        f"  # base64\n  .dockerconfigjson: {blob}\n  ca.pem: |\n    LS0tLS1CRUdJTiBDRVJU{MIXED}\n"
        "---\nkind: ConfigMap\ndata:\n  mode: c2FmZQ==\n"
    )
    out = assert_redacted(text, blob, f"LS0tLS1CRUdJTiBDRVJU{MIXED}")
    assert "mode: c2FmZQ==" in out  # a ConfigMap's data is not a secret


# ---- damage the scrubber must not do ---------------------------------------------------------

LEFT_ALONE = [
    'password_handler: "HTTPPasswordMgrWithDefaultRealm"',  # CamelCase words, not a password
    'token_class = "XMLHttpRequestToken"',
    "primaryKey=9O_wS4qxCi9dspM3tf_8sl6xryiOu-",
    "foreignKey=y0sNjcaeOF2X24sKxM0i6IZmEyaDUF",
    "key_down_event=ky4nEK_wxQ1tplf=DR61-Pd1Rc3Z_m",
    '"bucket_key": "SalesResults-1.2"',
    "arn:aws:sns:us-east-1:111122223333:aaaaaaaaaaaaaaaaaaassssssddddddddddddd",
    "curl -u <user:password> https://test.example.com/endpoint",
    'curl -H "Authorization: Bearer <Openverse API token>" https://api.example.org',
    "- (id)hf_requiredCharacteristicTypesForDisplayMetadata;",
    'telegram_api_token = "<xsd:element name="AgencyCode" '
    'type="clm73443:AgencyCodeContentTypeX"/>"',
    'curl --user "{{ $.Values.username }}:{{ $.Values.password }}" http://svc',
    "export OP_SERVICE_ACCOUNT_TOKEN=ops_eyJzaWduSW5BZGRyZXNzIjoiaHR0cHM6...",
    "token: str = get_token()\npassword: Optional[str] = None",
    # a fixed-length format inside a longer run is not that token
    "blob AIza" + tok("gk-long", 44, URLSAFE) + " end",
    "digest sntryu_" + tok("sentry-long", 66, HEX.lower()),
    "id=PK8~0,7~z4Q~" + tok("usk", 37, ALNUM) + "~k2q,AQACAAE/site/3",
    # PASS not named for a credential, and markup after a bare value
    "TEST_PASS_COUNT = 7d3f9a2b11",
    "db_pass_file=/run/secrets/db9",
    "<password>" + "</password><br>",
    "see https://api.softlayer.com/rest/v3/SoftLayer_Account/getObject.json",
    "BUNDLE_JOBS=4\nBUNDLE_PATH: vendor/bundle\nBUNDLE_GEMS__EXAMPLE__IO: ${GEM_CREDS}",
    'props.put("PAGE_TOKEN_TTL", "86400000000000");',
    # a URL's user that names a person, an account or (over SSH) a job: not a credential
    "git clone https://deploy-bot-2024-runner@git.example.com/app.git",
    "mailto via https://firstname.lastname.1987@example.com/inbox",
    "ssh://" + tok("job-id", 24, HEX.lower()) + "@ssh.hf.jobs",
    "https://" + "x" * 32 + "@o0.ingest.sentry.io/0",
    # a raw string is a regex; an f-string that interpolates is code; a piped or set reference
    "_TOKEN_RE = r'[A-Za-z0-9]{32}'\nsecret = r'(?P<key>[a-f0-9]{40})'",
    'credentials = f"{username}:{password}@" if password else ""',
    """return {"Authorization": f'Token token="{token}"'}""",
    'echo "$DOCKER_TOKEN" | docker login ghcr.io -u ci --password-stdin',
    "echo $SUDO_PASSWORD | sudo -S apt-get update",
    "ngrok config add-authtoken $NGROK_AUTHTOKEN",
    "set -x\nset -gx PATH $PATH /usr/local/bin\nsetx TOKEN_TTL 3600",
    "set -gx API_KEY_FILE ~/.config/key\nset -gx SECRET_NAME prod-db-credentials",
    'auth=("admin", password)\nauth=("user", os.environ["PW"])\nauth=("user", "password")',
    'variable "region" {\n  default = "us-east-1"\n}\nvariable "db_password" { sensitive = true }',
    'variable "admin_password" { default = "${random_password.admin.result}" }',
    'os.environ.get("AWS_SECRET_ACCESS_KEY", "minioadmin")\nos.getenv("API_KEY", "")',
    "aws configure set default.region us-east-1\nnet user deploy\nzip -r backup.zip data",
    "mongosh -u admin -p --authenticationDatabase admin\necho $PW | passwd --stdin deploy",
    # a free function's argument, a setter given a variable or a URL, a constant, an empty fallback
    'digest = hash_password("correct-Horse-9")\nuser.setPassword(password)',
    'client.setTokenUrl("https://auth.example.com/oauth/token")\n#define TOKEN_MAX 1024',
    'const token = cached || "";\nconst secret = process.env.SECRET ?? null;',
    # cookies that hold no session
    "Set-Cookie: theme=dark; Path=/; Max-Age=31536000\nCookie: _ga=GA1.2.1234567890.1700000000",
    # .pgpass look-alikes: placeholders, a template, a grep hit, times, an IPv6 address, passwd
    "echo 'db.example.com:5432:app:app:*' >> ~/.pgpass\n*:*:*:*:*",
    "hostname:port:database:username:password\nlocalhost:5432:app:app:$PGPASSWORD",
    "localhost:5432:mydb:postgres:changeme",
    "app.py:12:url:host:" + tok("grep-hit", 12, LOWER_ALNUM),
    "12:30:45:07:99a1b2c3\n2001:db8:85a3:0:0:8a2e:370:7334\nroot:x:0:0:root:/root:/bin/bash",
    # wandb login with no key, a reference, then a git SHA after another command
    "wandb login --relogin\nwandb login --host https://wandb.corp.example\nwandb login $WANDB_KEY",
    "wandb login && git checkout " + tok("git-sha", 40, HEX),
    "wandb login --relogin; git show " + tok("git-sha-2", 40, HEX) + " --stat",
]


@pytest.mark.parametrize("text", LEFT_ALONE, ids=range(len(LEFT_ALONE)))
def test_look_alike_left_unchanged(text):
    scrubber = Redactor()
    assert scrubber.text(text) == text
    assert scrubber.text(json.dumps({"content": text})) == json.dumps({"content": text})
    assert not scrubber.counts


@pytest.mark.parametrize("backend", available())
def test_every_backend_finds_the_new_shapes(backend):
    """The new gates are multi-pattern gates: each engine finds the same shapes, also after
    other text (engines report a gate at different places in its match: Hyperscan at its end,
    `re` at its start, and a finder must find its own way back from either)."""
    for text, secret in [*SHAPES.values(), *TOKENS.values()]:
        assert_redacted(text, secret, backend=backend)
        assert_redacted(f"# a line before\n{text}", secret, backend=backend)


# ---- JSON escapes that hide a gate -------------------------------------------------------------


@pytest.mark.parametrize("backend", available())
def test_a_secret_hidden_by_json_escapes_alone_is_found(backend):
    """`\\/` (PHP's json_encode writes every `/` so) and `\\u0041` hide the gate a rule needs
    (`://`, `AKIA`); with no other gate in the text, the escapes alone get it parsed."""
    password = "Vx8" + tok("escaped-pw", 14)
    key = "AKIA" + tok("escaped-aws", 16, UPPER_ALNUM)
    doc = (
        '{"dsn": "mysql:\\/\\/app:' + password + '@db.example.net\\/shop", '
        '"k": "\\u0041' + key[1:] + '", "ansi": "\\u001b[0m done"}'
    )
    out = Redactor(backend=backend).text(doc)
    assert password not in out and key[4:] not in out, out
    assert json.loads(out)["ansi"] == "\x1b[0m done"
    plain = '{"path": "src\\/app\\/main.py", "ansi": "\\u001b[0m"}'
    assert Redactor(backend=backend).text(plain) == plain  # nothing hidden: unchanged
