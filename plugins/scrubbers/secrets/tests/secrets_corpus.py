"""The secrets test corpus: planted secrets of every shape, and look-alikes that must survive.

Every planted value is fake but well-formed (right prefix, length and alphabet), generated from a
fixed seed so the corpus is the same on every run; none is a live credential. Each `Planted`
holds the context it is written in (a config line, a command, a header, a file) and the value
that must never appear in any output. Look-alikes are strings a scrubber must leave exactly as
they are: hashes, ids, base64 images, templates and placeholders, and code that names secrets.
"""

from __future__ import annotations

import base64
import json
import random
import string
from dataclasses import dataclass

ALNUM = string.ascii_letters + string.digits
LOWER_ALNUM = string.ascii_lowercase + string.digits
UPPER_ALNUM = string.ascii_uppercase + string.digits
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "-_"


def tok(seed: str, n: int, alphabet: str = ALNUM) -> str:
    """`n` random characters of `alphabet`, the same for the same seed; with a digit and a
    letter (and both cases for mixed alphabets), as real keys nearly always have."""
    rng = random.Random(seed)
    while True:
        out = "".join(rng.choice(alphabet) for _ in range(n))
        kinds = [any(c.isdigit() for c in out), any(c.isalpha() for c in out)]
        if any(c.isupper() for c in alphabet) and any(c.islower() for c in alphabet):
            kinds += [any(c.isupper() for c in out), any(c.islower() for c in out)]
        if all(kinds) or not any(c.isalpha() for c in alphabet):
            return out


@dataclass(frozen=True)
class Planted:
    shape: str  # a name for the test id
    secret: str  # must never appear in any output
    context: str  # how it is written
    type: str | None = None  # the placeholder type it must become (None: any type)


def _pem(kind: str, seed: str, lines: int = 6) -> tuple[str, str]:
    body = "\n".join(tok(f"{seed}{i}", 64, B64) for i in range(lines))
    return body.split("\n")[2], f"-----BEGIN {kind}-----\n{body}\n-----END {kind}-----"


AWS_SECRET = tok("aws-secret", 40, B64)
DB_PASSWORD = "S3cr3t!x" + tok("db", 6)
_RSA_LINE, RSA_PEM = _pem("RSA PRIVATE KEY", "rsa")
_SSH_LINE, SSH_PEM = _pem("OPENSSH PRIVATE KEY", "ssh")
_EC_LINE, EC_PEM = _pem("EC PRIVATE KEY", "ec", 3)
_PGP_LINE, PGP_PEM = _pem("PGP PRIVATE KEY BLOCK", "pgp")
_PK8_LINE, PK8_PEM = _pem("PRIVATE KEY", "pk8", 4)
_B64_PEM = base64.b64encode(_pem("RSA PRIVATE KEY", "kube", 4)[1].encode()).decode()
_JWT = ".".join(
    [
        base64.urlsafe_b64encode(json.dumps({"alg": "HS256", "typ": "JWT"}).encode()).decode(),
        base64.urlsafe_b64encode(json.dumps({"sub": tok("jwt", 12), "iat": 1}).encode()).decode(),
        tok("jwt-sig", 43, URLSAFE),
    ]
).replace("=", "")
_BASIC = base64.b64encode(b"deploy:" + tok("basic", 14).encode()).decode()
_DOCKER_AUTH = base64.b64encode(b"ci-bot:" + tok("docker-auth", 18).encode()).decode()

P = Planted
# fmt: off
PLANTED: list[Planted] = [
    # cloud
    P("aws-access-key", "AKIA" + tok("akia", 16, UPPER_ALNUM),
      "aws configure set aws_access_key_id {s}", "aws-access-key"),
    P("aws-secret-ini", AWS_SECRET, "[default]\naws_secret_access_key = {s}\nregion = us-east-1"),
    P("aws-secret-env", tok("aws-secret-2", 40, B64), "export AWS_SECRET_ACCESS_KEY={s}"),
    P("aws-session-token", "IQoJb3JpZ2luX2Vj" + tok("sts", 120, B64),
      "aws_session_token = {s}"),
    P("gcp-api-key", "AIza" + tok("gcp", 35, URLSAFE), "GOOGLE_MAPS_KEY: {s}", "google-api-key"),
    P("google-oauth-secret", "GOCSPX-" + tok("gocspx", 28, URLSAFE),
      '{{"client_id": "1234.apps.googleusercontent.com", "client_secret": "{s}"}}'),
    P("google-oauth-token", "ya29." + tok("ya29", 60, URLSAFE),
      "curl -H 'Authorization: Bearer {s}' https://www.googleapis.com/drive/v3/files"),
    P("gcp-service-account-key", _PK8_LINE,
      json.dumps({"type": "service_account", "private_key": PK8_PEM + "\n"}).replace("{", "{{")
      .replace("}", "}}")),
    P("azure-storage-key", tok("azure", 86, B64) + "==",
      "DefaultEndpointsProtocol=https;AccountName=prodstore;AccountKey={s};"
      "EndpointSuffix=core.windows.net"),
    P("azure-ad-client-secret", "x7Z8Q~" + tok("aad", 34, ALNUM + "_~.-"),
      "AZURE_CLIENT_SECRET={s}"),
    P("azure-sas-signature", tok("sas", 30) + "%2B" + tok("sas2", 10) + "%3D",
      "https://acct.blob.core.windows.net/c/f.txt?sv=2022-11-02&sp=r&sig={s}"),
    P("alibaba-key", "LTAI" + tok("ali", 20), "ALIBABA_CLOUD_ACCESS_KEY_ID={s}"),
    P("digitalocean-token", "dop_v1_" + tok("do", 64, HEX), "doctl auth init -t {s}"),
    # AI providers
    P("openai-project-key", "sk-proj-" + tok("oai", 100, URLSAFE),
      "OPENAI_API_KEY={s}", "openai-api-key"),
    P("openai-legacy-key", "sk-" + tok("oai1", 20) + "T3BlbkFJ" + tok("oai2", 20),
      'openai.api_key = "{s}"', "openai-api-key"),
    P("anthropic-key", "sk-ant-api03-" + tok("ant", 93, URLSAFE) + "AA",
      "client = Anthropic(api_key='{s}')", "anthropic-api-key"),
    P("huggingface-token", "hf_" + tok("hf", 34), "huggingface-cli login --token {s}",
      "huggingface-token"),
    P("nvidia-key", "nvapi-" + tok("nv", 64, URLSAFE), "NVIDIA_API_KEY: {s}", "nvidia-api-key"),
    P("groq-key", "gsk_" + tok("groq", 52), "GROQ_API_KEY={s}", "groq-api-key"),
    P("replicate-token", "r8_" + tok("r8", 37), "export REPLICATE_API_TOKEN={s}"),
    P("perplexity-key", "pplx-" + tok("pplx", 48), "key = {s}", "perplexity-api-key"),
    P("xai-key", "xai-" + tok("xai", 80), "XAI_API_KEY={s}", "xai-api-key"),
    P("openrouter-key", "sk-or-v1-" + tok("or", 64, HEX), "OPENROUTER_API_KEY={s}"),
    # code hosting and CI
    P("github-pat", "ghp_" + tok("ghp", 36), "git push https://{s}@github.com/org/repo.git",
      "github-token"),
    P("github-fine-grained", "github_pat_" + tok("ghfg", 22) + "_" + tok("ghfg2", 59),
      "GH_TOKEN={s} gh pr list", "github-token"),
    P("github-oauth", "gho_" + tok("gho", 36), "$ gh auth token\n{s}\n", "github-token"),
    P("gitlab-pat", "glpat-" + tok("glpat", 20, URLSAFE), "PRIVATE-TOKEN: {s}", "gitlab-token"),
    P("gitlab-runner", "glrt-" + tok("glrt", 20, URLSAFE),
      "gitlab-runner register --token {s}", "gitlab-token"),
    P("vault-token", "hvs." + tok("vault", 95, URLSAFE), "VAULT_TOKEN={s} vault kv get secret/db",
      "vault-token"),
    P("doppler-token", "dp.st.prd." + tok("doppler", 43), "DOPPLER_TOKEN: '{s}'"),
    P("pulumi-token", "pul-" + tok("pulumi", 40, HEX), "pulumi login --token {s}"),
    P("databricks-token", "dapi" + tok("dbx", 32, HEX), "DATABRICKS_TOKEN={s}",
      "databricks-token"),
    P("heroku-key", "HRKU-AA" + tok("heroku", 58, URLSAFE), "heroku config --token {s}"),
    # package registries
    P("npm-token", "npm_" + tok("npm", 36), "echo {s} > token.txt", "npm-token"),
    P("npmrc", "npm_" + tok("npmrc", 36), "//registry.npmjs.org/:_authToken={s}"),
    P("pypi-token", "pypi-AgEIcHlwaS5vcmc" + tok("pypi", 80, URLSAFE),
      "[pypi]\n  username = __token__\n  password = {s}", "pypi-token"),
    P("rubygems-key", "rubygems_" + tok("gem", 48, HEX), "GEM_HOST_API_KEY={s}"),
    P("dockerhub-token", "dckr_pat_" + tok("dckr", 27, URLSAFE),
      "echo {s} | docker login -u me --password-stdin", "docker-hub-token"),
    P("nuget-key", "oy2" + tok("nuget", 43, LOWER_ALNUM), "dotnet nuget push x.nupkg -k {s}",
      "nuget-key"),
    P("crates-token", "cio" + tok("cio", 32), "cargo login {s}", "crates-token"),
    # payments, messaging, webhooks
    P("stripe-live", "sk_live_" + tok("stripe", 99), "stripe.api_key = '{s}'", "stripe-key"),
    P("stripe-test", "sk_test_" + tok("stripet", 99), "STRIPE_SECRET={s}"),
    P("stripe-restricted", "rk_live_" + tok("rk", 99), "{s}", "stripe-key"),
    P("stripe-webhook", "whsec_" + tok("whsec", 32), "endpoint secret {s} (from the dashboard)",
      "stripe-webhook-secret"),
    P("slack-bot", "xoxb-" + tok("s1", 12, "0123456789") + "-" + tok("s2", 13, "0123456789")
      + "-" + tok("s3", 24), "SLACK_BOT_TOKEN={s}", "slack-token"),
    P("slack-webhook", "T" + tok("sw1", 10, UPPER_ALNUM) + "/B" + tok("sw2", 10, UPPER_ALNUM)
      + "/" + tok("sw3", 24), "curl -X POST https://hooks.slack.com/services/{s} -d @m.json"),
    P("slack-app", "xapp-1-" + tok("xapp", 40, ALNUM + "-"), "SLACK_APP_TOKEN={s}"),
    P("discord-webhook", tok("dw", 19, "0123456789") + "/" + tok("dw2", 68, URLSAFE),
      "https://discord.com/api/webhooks/{s}"),
    P("discord-bot", "M" + tok("db1", 25) + "." + tok("db2", 6) + "." + tok("db3", 27),
      "client.run('{s}')"),
    P("telegram-bot", tok("tg", 10, "0123456789") + ":AA" + tok("tg2", 33, URLSAFE),
      "https://api.telegram.org/bot{s}/getMe"),
    P("twilio-key", "SK" + tok("twilio", 32, HEX), "TWILIO_API_KEY={s}"),
    P("sendgrid-key", "SG." + tok("sg1", 22, URLSAFE) + "." + tok("sg2", 43, URLSAFE),
      "sg = SendGridAPIClient('{s}')", "sendgrid-key"),
    P("mailgun-key", "key-" + tok("mailgun", 32, HEX), "auth=('api', '{s}')"),
    P("shopify-token", "shpat_" + tok("shop", 32, HEX), "X-Shopify-Access-Token: {s}"),
    P("square-token", "sq0atp-" + tok("sq", 22, URLSAFE), "SQUARE_ACCESS_TOKEN={s}"),
    P("postman-key", "PMAK-" + tok("pm1", 24, HEX) + "-" + tok("pm2", 34, HEX),
      "postman login --with-api-key {s}"),
    P("linear-key", "lin_api_" + tok("linear", 40), "LINEAR_API_KEY={s}", "linear-key"),
    P("notion-token", "ntn_" + tok("notion", 46), "NOTION_TOKEN: {s}"),
    P("sentry-token", "sntryu_" + tok("sentry", 64, HEX), "SENTRY_AUTH_TOKEN={s}"),
    P("grafana-token", "glsa_" + tok("grafana", 32) + "_" + tok("grafana2", 8, HEX),
      "GF_TOKEN={s}", "grafana-token"),
    P("age-key", "AGE-SECRET-KEY-1" + tok("age", 58, "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"),
      "# created: 2024-01-01\n{s}", "age-secret-key"),
    # private keys and signed tokens
    P("rsa-private-key", _RSA_LINE, "cat id_rsa\n" + RSA_PEM.replace("{", "{{")),
    P("openssh-private-key", _SSH_LINE, SSH_PEM + "\n", "private-key"),
    P("ec-private-key-json", _EC_LINE,
      json.dumps({"key": EC_PEM}).replace("{", "{{").replace("}", "}}")),
    P("pgp-private-key", _PGP_LINE, PGP_PEM, "private-key"),
    P("kubeconfig-client-key", _B64_PEM, "    client-key-data: {s}"),
    P("jwt", _JWT, "session={s}; Path=/; HttpOnly"),
    # URLs with credentials
    P("url-password-bang", DB_PASSWORD, "DATABASE_URL=postgres://admin:{s}@db.internal:5432/app"),
    P("url-password-amp", "Pa&ss" + tok("amp", 8), "mysql://root:{s}@127.0.0.1/shop",
      "password"),
    P("url-password-dollar", "pa$$W0rd" + tok("dollar", 4),
      "mongodb+srv://app:{s}@cluster0.mongodb.net/test"),
    P("url-password-hash", "h4sh#" + tok("hash", 8), "redis://default:{s}@cache:6379/0",
      "password"),
    P("url-token-user", tok("urltok", 40), "https://x-access-token:{s}@github.com/o/r.git"),
    P("url-password-encoded", "p%40ss" + tok("pct", 8), "amqp://worker:{s}@mq.internal:5672/"),
    # names that say secret, in every syntax
    P("ini-password", "hunter2" + tok("ini", 6), "[database]\nhost = db\npassword = {s}\n"),
    P("yaml-password", "S3cr3t!y" + tok("yaml", 5), "db:\n  user: app\n  password: {s}\n",
      "password"),
    P("yaml-api-key", tok("yamlkey", 32), "service:\n  api_key: {s}\n"),
    P("toml-token", tok("toml", 24), '[auth]\ntoken = "{s}"\n'),
    P("dotenv-password", "pw" + tok("env", 12), "DB_HOST=db\nDB_PASSWORD={s}\nDEBUG=true\n",
      "password"),
    P("json-client-secret", tok("json", 30), '{{"client_id": "abc", "client_secret": "{s}"}}'),
    P("shell-export-quoted", tok("export", 28), 'export API_TOKEN="{s}"'),
    P("python-kwarg", tok("kwarg", 32), 'client = Client(api_key="{s}", timeout=30)'),
    P("typed-assignment", tok("typed", 24), 'SECRET: str = "{s}"'),
    P("go-short-assign", tok("go", 24), 'apiKey := "{s}"'),
    P("powershell-env", tok("ps", 24), '$env:ACCESS_TOKEN = "{s}"'),
    P("dockerfile-env", "S3cret" + tok("dockerfile", 10),
      "FROM python:3.11\nENV ADMIN_PASSWORD {s}\n"),
    P("cli-flag", "Cli" + tok("cliflag", 14), "app deploy --db-password {s} --region eu"),
    P("xml-element", "Xm1" + tok("xml", 12), "<config><password>{s}</password></config>"),
    P("nuget-config", "Nu9" + tok("nugetpw", 12),
      '<add key="ClearTextPassword" value="{s}" />'),
    P("k8s-env-pair", "K8s" + tok("k8s", 14), "env:\n  - name: DB_PASSWORD\n    value: {s}\n"),
    P("json-name-value", "Nv2" + tok("nv", 14), '[{{"name": "API_SECRET", "value": "{s}"}}]'),
    P("docker-config-auth", _DOCKER_AUTH, '{{"auths": {{"ghcr.io": {{"auth": "{s}"}}}}}}'),
    P("netrc", "Nr3" + tok("netrc", 12), "machine api.example.com\n  login me\n  password {s}\n"),
    P("query-access-token", tok("query", 32), "GET /v1/data?access_token={s}&page=2"),
    P("jdbc-password", "Jd8c!" + tok("jdbc", 8),
      "jdbc:mysql://db:3306/app?user=root&password={s}&useSSL=false"),
    P("adonet-password", "Ad0!" + tok("ado", 10),
      "Server=tcp:db.example.com;Database=app;User Id=sa;Password={s};Encrypt=True"),
    # HTTP auth and command lines
    P("bearer-header", tok("bearer", 40, URLSAFE), "Authorization: Bearer {s}", "bearer-token"),
    P("basic-header", _BASIC, "curl -H 'Authorization: Basic {s}' https://api.example.com",
      "basic-auth"),
    P("api-key-header", tok("xapikey", 32), "X-API-Key: {s}"),
    P("curl-user", "Cu" + tok("curlu", 12), "curl -u admin:{s} https://jenkins.internal/api"),
    P("mysql-p", "My5q1" + tok("mysql", 8), "mysql -h db -u root -p{s} shop < dump.sql"),
    P("sshpass", "Ssh" + tok("sshpass", 10), "sshpass -p '{s}' ssh deploy@10.0.0.5"),
    P("redis-cli", "Rd1" + tok("redis", 12), "redis-cli -h cache -a {s} ping"),
    # more syntaxes, written after the rules (a hold-out of sorts)
    P("php-define", "Wp9!" + tok("wp", 10), "define('DB_PASSWORD', '{s}');", "password"),
    P("setenv-call", tok("setenv", 24), 'monkeypatch.setenv("STRIPE_API_KEY", "{s}")'),
    P("openssl-pass", "Ssl9" + tok("openssl", 10),
      "openssl pkcs12 -export -in c.pem -passout pass:{s} -out c.p12"),
    P("keytool-storepass", "Kt7" + tok("keytool", 10),
      "keytool -list -keystore ks.jks -storepass {s}"),
    P("az-login", "Az9!" + tok("az", 10), "az login --service-principal -u app -p {s} --tenant t"),
    P("spring-property", "Sp1" + tok("spring", 10), "spring.datasource.password={s}"),
    P("helm-set", "Hm2" + tok("helm", 10), "helm upgrade app ./chart --set auth.rootPassword={s}"),
    P("php-variable", "Ph3!" + tok("php", 10), "$password = '{s}';"),
    P("yaml-quoted-single", "Yq4#" + tok("yq", 10), "database:\n  db_pass: '{s}'\n"),
    P("servicebus-key", tok("sbus", 43, B64) + "=",
      "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey={s}"),
    P("ruby-hash-rocket", tok("ruby", 28), "config[:api_token] => '{s}'"),
    P("camel-json", tok("camel", 24), '{{"clientSecret":"{s}","clientId":"web"}}'),
    P("token-header", tok("tokhdr", 32),
      "curl -H 'Authorization: Token {s}' https://api.example.com"),
]


def render(p: Planted) -> str:
    return p.context.format(s=p.secret)


def probes(secret: str) -> list[str]:
    """Substrings whose presence means `secret` (or most of it) leaked: the whole value, its
    JSON-escaped form, and for long values its middle (a partial redaction leaves that)."""
    out = [secret, json.dumps(secret)[1:-1]]
    if len(secret) >= 24:
        mid = len(secret) // 2
        out.append(secret[mid - 6 : mid + 6])
    return sorted(set(out))


_IMAGE = base64.b64encode(random.Random(7).randbytes(3000)).decode()
_BLOB = base64.b64encode(random.Random(8).randbytes(600)).decode()

LOOKALIKES: list[str] = [
    # hashes and ids
    "commit 3f786850e387550fdab836ed7e6dc881de23001b\nAuthor: Dev <dev@example.com>",
    "a1b2c3d (HEAD -> main) Fix tests\n9f8e7d6 Add scrubber",
    "trace 123e4567-e89b-12d3-a456-426614174000 request 9b2c1d7e-3f4a-4b5c-8d6e-7f8091a2b3c4",
    "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  dist.tar.gz",
    '"integrity": "sha512-9A2w5wQYqAbH5XqNmc3K1E1gZ8fG9hJZl0oq3vXbD7uJt1yN4rS2pL6mK8cW0eR4tY7uI=="',
    "image: postgres:16@sha256:4b1c3b0f6c7d2e9a8f5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f",
    "golang.org/x/net v0.17.0 h1:pVaXccu2ozPjCXewfr1S2xoYxOSxPqqQJmM4qfHMvTM=",
    '{"id": "5f2b8c9e1a3d4f6b7c8d9e0f1a2b3c4d", "etag": "W/\\"a3f2b1\\""}',
    "md5sum: d41d8cd98f00b204e9800998ecf8427e",
    # base64 images and blobs
    f"data:image/png;base64,{_IMAGE}",
    f'<img src="data:image/jpeg;base64,{_IMAGE[:1200]}">',
    f'{{"type": "image", "source": {{"type": "base64", "data": "{_BLOB}"}}}}',
    "eyJmb28iOiJiYXIifQ== is base64 for a JSON object",
    # templates, references and placeholders
    "DATABASE_URL=postgres://user:${PASSWORD}@db:5432/app",
    "url: postgres://{{ db_user }}:{{ db_password }}@{{ db_host }}/app",
    "mysql://root:<password>@localhost:3306/db",
    "redis://:$REDIS_PASSWORD@cache:6379",
    "git clone https://<user>:<token>@github.com/org/repo.git",
    "postgres://user:password@localhost:5432/mydb",
    "amqp://guest:guest@localhost:5672/",
    "sqlalchemy.url = postgresql://%(user)s:%(password)s@%(host)s/db",
    "password: changeme\napi_key: your-api-key-here\ntoken: <token>",
    "OPENAI_API_KEY=sk-...\nAPI_KEY=xxxxxxxxxxxx\nSECRET_KEY=********",
    'password = "<your password>"\ntoken = "REPLACE_ME"\napi_key = "YOUR_API_KEY"',
    "GITHUB_TOKEN=ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\nAWS_ACCESS_KEY_ID=AKIAXXXXXXXXXXXXXXXX",
    "      password: ${{ secrets.DB_PASSWORD }}\n      token: ${{ github.token }}",
    'ansible_become_password: "{{ vault_become_password }}"',
    "curl -H \"Authorization: Bearer ${TOKEN}\" https://api.example.com/v1/me",
    "curl -H 'Authorization: Bearer <token>' -H 'X-Api-Key: $API_KEY' https://api.example.com",
    'curl -H "Authorization: Bearer $(gcloud auth print-access-token)" https://x.googleapis.com',
    "//registry.npmjs.org/:_authToken=${NPM_TOKEN}",
    "export OPENAI_API_KEY=$(cat ~/.secrets/openai)",
    "password: !vault |\n  $ANSIBLE_VAULT;1.1;AES256",
    # code that names secrets
    'api_key = os.environ["OPENAI_API_KEY"]\npassword = getpass.getpass()\n',
    "token_count = len(tokens)\nheaders = {'Authorization': f'Bearer {token}'}\n",
    "const apiKey = process.env.API_KEY;\nconst secret = await vault.read(path);\n",
    "class Auth(enum.Enum):\n    API_KEY = 'api_key'\n    PASSWORD = 'password'\n",
    "def check_password(user, password):\n    if not password:\n        return False\n    pass\n",
    "def login(username: str, password: str) -> Token:\n    token = issue(username)\n",
    "self.password = password\nself.api_key = api_key or settings.OPENAI_API_KEY\n",
    "if password != confirm_password:\n    raise ValueError('passwords differ')\n",
    "password_hash = bcrypt.hashpw(password.encode(), bcrypt.gensalt())",
    'let api_key = env::var("API_KEY")?;\napiKey := os.Getenv("API_KEY")\n',
    "interface Creds { password?: string; token: string | null }",
    "MAX_TOKENS=4096\nSSH_KEY_PATH=/home/dev/.ssh/id_ed25519\nPUBLIC_KEY_FILE=key.pub\n",
    "max_tokens: 1024\ninput_tokens: 2048\ntoken_type: bearer\npassword_min_length: 12",
    "id = models.AutoField(primary_key=True)\nrows.sort(key=lambda r: r[1])\nsorted(xs, key=len)",
    "for key, value in config.items():\n    print(f'{key}={value}')",
    "env:\n  - name: DB_PASSWORD\n    valueFrom:\n      secretKeyRef:\n        name: db\n"
    "        key: password\n",
    '{"name": "password", "type": "string", "required": true}',
    "kubectl create secret generic db --from-file=password=./password.txt",
    "docker login -u me --password-stdin < token.txt",
    "Set the password: it must have 12 characters. The token: see the docs.",
    "The API key is read from the environment; never commit your password.",
    # public material and ordinary text
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGr5Q0jX2b9wV4k8m3nL6pR1tY7uI0oP2aS5dF8gH3jK dev@laptop",
    "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE3kQ9vX7wL2mN4bZ6cJ1fH5dG0sA2\n"
    "-----END PUBLIC KEY-----",
    "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUQk9vX7wL2mN4bZ6cJ1fH5dG0sA2wCgYIKoZIzj0EA\n"
    "-----END CERTIFICATE-----",
    "const stripe = Stripe('pk_live_" + tok("pk", 24) + "');",
    "arn:aws:secretsmanager:us-east-1:123456789012:secret:prod/db2-AbCdEf",
    "git clone git@github.com:org/repo.git && cd repo && git checkout -b feature/scrub",
    "npm view https://registry.npmjs.org:443/@babel/core versions",
    'resp = requests.get("https://api.example.com/v1/items?page=2", timeout=30)',
    "ip 10.0.0.12 port 8080 pid 4242 at 2024-05-01T12:00:00Z user@example.com",
    "pip install scikit-learn==1.4.0  # sk-learn",
    "Account SID (ACxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx) and AKIAXXXXXXXXXXXXXXXX",
    "monkey = Monkey(); keyboard.press('a'); turkey = 3",
    "Basic usage: run `bearer-auth --help`. Bearer tokens expire after 1h.",
    # shell environments and names with digits
    "PWD=/home/dev/project2\nOLDPWD=/home/dev/project1\nSSH_AUTH_SOCK=/tmp/ssh-XYZ12/agent.42\n"
    "GIT_ASKPASS=/usr/lib/git-core/git-gui--askpass\nHOME=/home/dev",
    'cache_key = "user_profile_cache_2024"\nredis_key: "users:v2:profile:42"',
    'idempotency_key = "3f786850e387550fdab836ed7e6dc881de23001b"',
    '{"token": "Hello", "logprob": -0.12}\n{"next_page_token": "CAESBggBEAEYAQ"}',
    "npm install sk-tree-shaker-plugin-v2-beta-release-candidate",
    "openssl req -new --key-file ./certs/server2.pem --password-file ~/.secrets/pw1.txt",
    "- name: Checkout\n  uses: actions/checkout@v4\n  with:\n    token: ${{ secrets.GH_PAT }}",
    # found in library code: docs, enums, type hints, minified JS (none of them a secret)
    'token_exchange_profile=server_config.get("token_exchange_profile", "rfc8693"),',
    'MovedAttribute("HTTPPasswordMgr", "urllib2", "urllib.request"),',
    '"update": {"credential_b64": credential_b64},\ncredentials=boto3_info.credentials,',
    "def sign(private_key: Ed25519PrivateKey | Ed448PrivateKey) -> bytes:",
    'SET_EXTRA_PARAMETERS_TO_PASS_THROUGH = "Set extra-parameters to \'pass-through\'"',
    '_AUDIT_VALUES: Final = \'{"fields_changed": ["password"]}\'',
    'TOKEN:"token",BASIC:"basic",OAUTH2_TOKEN_EXCHANGE:"oauth2_token_exchange"',
    "outgoing.write(base64.b64encode(b'secret:' + username))",
    'console.error("Error fetching credentials:",e)};rL.Credentials=rz;class rU{}',
    'let n="mcp-session-token:";function i(t,r){return`${t}`}',
    "key = 'arrow-datasets/nyc-taxi/year=2019/month=6/part-0.parquet'",
    'AWS_S3_KEY = "aws.s3.key"',
    '"headers": {"x-litellm-api-key": "Bearer <your-master-key>"}',
    'placeholder:`-----BEGIN PRIVATE KEY-----${s}`',
    "Authorization: Basic base64_encoded_creds",
    'credentials: Base64-encoded credentials (client_id:client_secret)',
    "'CopySourceSSECustomerKeyMD5': 'SSECustomerKeyMD5',",
    "github://org:repo@sha/precip/catalog.yml",
    '{"LANGFUSE_PUBLIC_KEY": "pk-lf-1234"}',
    '"api_key": "tvly-***"',
    "`--secrets KEY=value` leaves the value in your shell history",
    '{"type": "thinking", "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"}',
    "https://REDACTED:REDACTED@www.example.com/",
]
