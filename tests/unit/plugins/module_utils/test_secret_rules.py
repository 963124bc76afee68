# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The secret rule table, case by case: every shape is caught and masked, every look-alike is left alone."""

import pytest
from ansible_collections.rlark.ops.plugins.module_utils.redact import (
    MASK,
    SECRET_RULES,
    redact,
    redact_text,
    secret_reason,
)
from ansible_collections.rlark.ops.plugins.module_utils.review import SECRETS_HINT, env_secret_findings, safe

PEM = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n-----END OPENSSH PRIVATE KEY-----"
)
# (env name, value, the secret part that must never show)
SECRETS = [
    ("PGPASSWORD", "hunter2-pg", None),
    ("DB_PASS", "hunter2", None),
    ("MYSQL_PWD", "s3cr3t!", None),
    ("REDIS_PASSWORD", "r3dis", None),
    ("SMTP_PASSWD", "mailpw", None),
    ("GPG_PASSPHRASE", "correct horse battery staple", None),
    ("adminPassword", "Adm1n", None),
    ("GH_PAT", "ghp_Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2", None),
    ("GITHUB_TOKEN", "gho_16C7e42F292c6912E7710c838347Ae178B4a", None),
    ("CI_JOB", "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz", "github_pat_11ABCDEFG0123456789"),
    ("GITLAB_CI", "glpat-xYz123AbC456dEf789gHi0", "glpat-xYz123AbC456dEf789gHi0"),
    ("OPENAI_KEY", "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z", None),
    ("LLM_BACKEND", "sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0", "sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0"),
    ("BILLING", "sk_live_4eC39HqLyjWDarjtT1zdp7dc", None),
    ("WANDB_KEY", "0123456789abcdef0123456789abcdef01234567", None),
    ("WANDB_API_KEY", "local-0123456789abcdef0123456789abcdef", None),
    ("HF_TOKEN", "hf_QmVyeVNlY3JldFRva2VuVmFsdWUxMjM0NTY3", None),
    ("MODEL_HUB", "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"),
    ("NOTIFY", "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX", "T00000000/B0000"),
    ("ALERTS", "https://discord.com/api/webhooks/123456789012345678/AbCdEf-GhIjKl_MnOp", "AbCdEf-GhIjKl_MnOp"),
    ("TEAMS", "https://contoso.webhook.office.com/webhookb2/abc-123@def/IncomingWebhook/x1y2", "IncomingWebhook/x1y2"),
    ("SLACK_BOT", "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", "xoxb-1234567"),
    ("SLACK_WEBHOOK_URL", "https://example.internal/hook/abc", None),
    ("DATABASE_URL", "postgres://trainer:Pa55w0rd@db:5432/runs", "Pa55w0rd"),
    ("MLFLOW_TRACKING_URI", "https://ops:t0psecret@mlflow.internal", "t0psecret"),
    ("AWS_ACCESS_KEY_ID", "AKIAIOSFODNN7EXAMPLE", None),
    ("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", None),
    ("AWS_SESSION_TOKEN", "FwoGZXIvYXdzEBYaDH3gT5example", None),
    ("S3_ID", "ASIAY34FZKBOKMUTVV7A", "ASIAY34FZKBOKMUTVV7A"),
    ("MAPS", "AIzaSyD-1234567890abcdefghijklmnopqrstu", "AIzaSyD-1234567890abcdefg"),
    ("GCP_SA", '{"type": "service_account", "private_key_id": "%s"}' % ("ab12" * 10), "ab12ab12ab12"),
    (
        "AZURE_STORAGE",
        "DefaultEndpointsProtocol=https;AccountName=x;AccountKey=Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MA==",
        "Zm9vYmFy",
    ),
    ("BLOB_URL", "https://acct.blob.core.windows.net/c/f?sv=2021&sig=AbCdEfGhIjKlMnOpQrStUv%2Bw%3D", "AbCdEfGhIjKl"),
    ("TLS_KEY", PEM, "b3BlbnNzaC1rZXktdjEAAAAABG5v"),
    ("BACKUP_BLOB", "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAAB", "b3BlbnNzaC1rZXktdjEAAAAABG5v"),
    ("SESSION_BLOB", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJwbGFudGVkIn0.dGhpcy1pcy1hLXNpZ25hdHVyZQ", None),
    ("AUTH_HEADER", "Bearer abcDEF123ghiJKL456mnoPQR", "abcDEF123ghiJKL456mnoPQR"),
    ("PROXY_AUTH", "Basic dXNlcjpwYXNzd29yZA==", "dXNlcjpwYXNzd29yZA=="),
    ("NPM_CONFIG", "npm_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "npm_AbCdEfGhIj"),
    ("TWINE_AUTH", "pypi-AgEIcHlwaS5vcmcCJGFiY2RlZmdoLTEyMzQtNTY3OC05YWJjLWRlZmdoaWprbG1u", "pypi-AgEIcHlwaS5vcmc"),
    ("MAIL_API", "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", "SG.ngeVfQFYQlKU0ufo8x5d1A"),
    ("SMS", "SK0123456789abcdef0123456789abcdef", "SK0123456789abcdef"),
    ("DATABRICKS_HOST_AUTH", "dapi0123456789abcdef0123456789abcdef", "dapi0123456789abcdef"),
    ("OPAQUE", "Xk29fJq8Lm3Np7Rt5Vw1Yz4Bc6Dh0Gs2", None),
    ("STRIPE_SECRET", "whsec_1234", None),
    ("clientSecret", "c1ient-s3cret", None),
    ("OAUTH_CREDENTIALS", "user:pw", None),
    ("SENTRY_DSN", "https://abc123@o0.ingest.sentry.io/1", None),
    ("COOKIE", "session=abc123def", None),
    ("LICENSE_KEY", "LK-1234-ABCD", None),
]
# (env name, value): names and values that only look like secrets
LOOK_ALIKES = [
    ("TOKENIZERS_PARALLELISM", "false"),
    ("NCCL_SOCKET_IFNAME", "eth0"),
    ("HF_HUB_OFFLINE", "1"),
    ("HF_HOME", "/data/hf"),
    ("PWD", "/workspace/RLinf"),
    ("MAX_TOKENS", "4096"),
    ("TOKEN_LIMIT", "2048"),
    ("MAX_PROMPT_TOKENS", "1024"),
    ("IMAGE", "registry.local/rlinf@sha256:" + "ab" * 32),
    ("GIT_COMMIT", "0f3c2a9d41b7e6c58a2d9e0b1c4f7a6d3e2b1c0a"),
    ("MASTER_ADDR", "ppo-head-0.ppo.rlark-7.svc.cluster.local"),
    ("HF_ENDPOINT", "https://huggingface.co/models"),
    ("DATA_URI", "s3://rl-data/math/v3/train.parquet"),
    ("CUDA_VISIBLE_DEVICES", "0,1,2,3"),
    ("SSH_KEY_PATH", "/root/.ssh/id_ed25519"),
    ("PASSWORD_FILE", "/run/secrets/db"),
    ("GOOGLE_APPLICATION_CREDENTIALS", "/var/secrets/google/key.json"),
    ("WANDB_SECRET_NAME", "wandb"),
    ("SORT_KEY", "reward"),
    ("sshPublicKey", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl ops@host"),
    ("RUN_ID", "3f2b8c1e-9d4a-4e7b-8c6f-1a2b3c4d5e6f"),
    ("RAY_ADDRESS", "auto"),
    ("PYTHONPATH", "/workspace/RLinf:/workspace/extra"),
    ("EXPERIMENT", "ppo-math-7b-global_step_12"),
    ("PASS_AT_K", "8"),
    ("TOKEN_TYPE", "bearer"),
    ("AUTH_ENABLED", "true"),
    ("WANDB_API_KEY_FILE", "${WANDB_KEY_PATH}"),
    ("RLARK_RUN", "records/demo/20261130T233844Z-guarded-stop-d059d4/stop.yml"),
]


def test_tables_are_large_enough_and_every_rule_is_exercised():
    assert len(SECRETS) >= 40 and len(LOOK_ALIKES) >= 15
    reasons = " ".join(secret_reason(name, value) for name, value, _part in SECRETS)
    # masked-value has its own test below: its "secret" is the mask itself
    unused = [r.id for r in SECRET_RULES if "rule %s)" % r.id not in reasons and r.id != "masked-value"]
    assert unused == [], "rules no case exercises: %s" % unused


@pytest.mark.parametrize("name,value,part", SECRETS, ids=[s[0] for s in SECRETS])
def test_secret_is_caught_and_masked_everywhere(name, value, part):
    part = part or value
    assert secret_reason(name, value), "%s=%s not caught" % (name, value)
    # a record or a result ({name, value} pairs and plain keys)
    masked = redact({"env": [{"name": name, "value": value}], name: value})
    assert part not in repr(masked)
    # a log line, a --diff line, a command line
    for text in ("%s=%s" % (name, value), "export %s='%s'" % (name, value), "+   %s: %s" % (name, value)):
        assert part not in redact_text(text), text
    # the review: an error finding whose hint says what to do
    found = env_secret_findings([{"name": name, "value": value}], "manifest.roles[0].env")
    assert [(f["id"], f["severity"], f["path"]) for f in found] == [("env-secret", "error", "manifest.roles[0].env[0]")]
    assert part not in repr(safe(found))


@pytest.mark.parametrize("name,value", LOOK_ALIKES, ids=[s[0] for s in LOOK_ALIKES])
def test_look_alike_is_left_alone(name, value):
    assert secret_reason(name, value) is None
    assert redact({"env": [{"name": name, "value": value}]}) == {"env": [{"name": name, "value": value}]}
    assert redact_text("%s=%s" % (name, value)) == "%s=%s" % (name, value)
    assert env_secret_findings([{"name": name, "value": value}], "manifest.roles[0].env") == []


@pytest.mark.parametrize("name", ["OPENAI_KEY", "SLACK_URL", "NOTES"])
def test_a_masked_value_in_a_module_result_is_still_refused(name):
    # resume reviews the rlark_job copy_from result, whose env values are already masked
    found = env_secret_findings([{"name": name, "value": MASK}], "spec.tasks[0].env")
    assert [(f["id"], f["severity"]) for f in found] == [("env-secret", "error")]
    assert "rule masked-value" in secret_reason(name, MASK) and redact_text(MASK) == MASK


def test_the_hint_survives_redaction_and_says_what_to_do():
    found = safe(env_secret_findings([{"name": "DB_PASS", "value": "hunter2"}], "manifest.roles[0].env"))
    assert found[0]["hint"] == SECRETS_HINT
    assert "Kubernetes Secret" in SECRETS_HINT and MASK not in SECRETS_HINT
    assert "hunter2" not in repr(found) and MASK not in found[0]["message"]


def test_preflight_reports_an_env_secret_once_at_the_manifest_path():
    from ansible_collections.rlark.ops.plugins.module_utils.preflight import preflight
    from migration_inputs import example, role

    manifest, profile = example("sandbox")
    env = role(manifest, "actor")["env"]
    env.append({"name": "DB_PASS", "value": "hunter2"})
    index = next(i for i, r in enumerate(manifest["roles"]) if r["name"] == "actor")
    result = preflight(manifest, profile)
    hits = [(f["path"], f["severity"]) for f in result["findings"] if f["id"] == "env-secret"]
    assert hits == [("manifest.roles[%d].env[%d]" % (index, len(env) - 1), "error")]
    assert result["findings"][0]["hint"] == SECRETS_HINT
    assert "hunter2" not in repr(result)
