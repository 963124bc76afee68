# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""checkpoint/s3.py: the S3 source read directly over a scripted fake client (issue 26)."""

import datetime
import io

import pytest
from ansible_collections.rlark.ops.plugins.module_utils.backoff import Retrying
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import s3
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.layouts import GateError
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.s3 import S3Source
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.step_listing import StepFacts
from botocore.exceptions import ClientError, EndpointConnectionError, NoCredentialsError, PartialCredentialsError

T0 = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)


def client_error(code="", status=None, message=None, op="ListObjectsV2"):
    """A ClientError as botocore parses one: its code a new string, not the interned literal of a test."""
    error = {"Code": code[:1] + code[1:]} if code else {}
    if message is not None:
        error["Message"] = message
    response = {"Error": error}
    if status is not None:
        response["ResponseMetadata"] = {"HTTPStatusCode": status}
    return ClientError(response, op)


class Client:
    """Scripted ListObjectsV2 pages and GETs, every call recorded."""

    def __init__(self, pages=(), objects=None, failures=()):
        self.pages = list(pages)
        self.objects = objects or {}
        self.failures = list(failures)
        self.calls = []

    def list_objects_v2(self, **kwargs):
        self.calls.append(("list", kwargs))
        if self.failures:
            raise self.failures.pop(0)
        return self.pages.pop(0)

    def get_object(self, **kwargs):
        self.calls.append(("get", kwargs))
        if self.failures:
            raise self.failures.pop(0)
        return self.objects[kwargs["Key"]]


def page(keys=(), prefixes=(), token=None, truncated=None, date=None, size=1, when=T0):
    out = {
        "Contents": [{"Key": k, "Size": size, "LastModified": when} for k in keys],
        "CommonPrefixes": [{"Prefix": p} for p in prefixes],
        "IsTruncated": bool(token) if truncated is None else truncated,
    }
    if token:
        out["NextContinuationToken"] = token
    if date:
        out["ResponseMetadata"] = {"HTTPHeaders": {"date": date}}
    return out


def source(prefix="ckpt", client=None, **kw):
    slept = []
    kw.setdefault("retrying", Retrying(sleep=slept.append, rand=lambda: 0.5))
    src = S3Source("b", prefix, client=client if client is not None else Client(), **kw)
    src.slept = slept
    return src


@pytest.mark.parametrize(
    "given, expected",
    [(None, ""), ("", ""), ("/", ""), ("//a", "a/"), ("a", "a/"), ("a/", "a/"), ("/a/b", "a/b/")],
)
def test_a_prefix_has_no_leading_and_one_trailing_slash(given, expected):
    assert s3.normalize_prefix(given) == expected


def test_error_code_reads_the_code_and_http_status_as_text():
    assert s3.error_code(ValueError("x")) == ("", "")
    assert s3.error_code(client_error("SlowDown", 503)) == ("SlowDown", "503")
    assert s3.error_code(client_error()) == ("", "")

    class Bare(Exception):
        response = None

    assert s3.error_code(Bare()) == ("", "")


@pytest.mark.parametrize(
    "prefix, single, root, described",
    [
        ("ckpt", None, "ckpt/", "s3://b/ckpt/"),
        ("/ckpt/global_step_7/", "global_step_7", "ckpt/", "s3://b/ckpt/global_step_7/"),
        ("a/b/global_step_300", "global_step_300", "a/b/", "s3://b/a/b/global_step_300/"),
        ("global_step_7", "global_step_7", "", "s3://b/global_step_7/"),
        ("", None, "", "s3://b/"),
        ("a/step_7", None, "a/step_7/", "s3://b/a/step_7/"),
    ],
)
def test_a_prefix_is_a_root_or_one_step(prefix, single, root, described):
    src = source(prefix)
    assert (src.single_step, src.root, src.describe(), src.others) == (single, root, described, [])
    assert src.location("global_step_9") == "s3://b/%sglobal_step_9/" % root
    assert src.uri() == "s3://b/" and src.kind == "s3"


def test_a_bucket_is_required():
    with pytest.raises(GateError) as raised:
        S3Source("", "ckpt", client=Client())
    assert str(raised.value) == "s3.bucket is required"


def test_the_default_retrying_makes_six_attempts():
    src = S3Source("b", "ckpt", client=Client())
    assert isinstance(src.retrying, Retrying) and src.retrying.attempts == 6


def fake_boto3(monkeypatch):
    made = {}

    class Config:
        def __init__(self, **kwargs):
            made["config"] = kwargs

    class Session:
        def __init__(self, **kwargs):
            made["session"] = kwargs

        def client(self, name, **kwargs):
            made["client"] = (name, kwargs)
            return "client"

    class Boto3:
        session = type("session", (), {"Session": Session})

    monkeypatch.setattr(s3, "import_boto3", lambda: (Boto3, Config, "exceptions"))
    return made


def test_a_client_is_made_for_the_endpoint_with_one_attempt_and_path_addressing(monkeypatch):
    made = fake_boto3(monkeypatch)
    src = S3Source(
        "b", "c", endpoint_url="http://gw:7070", region="r", access_key="AK", secret_key="SK", session_token="T"
    )
    assert (src.client, src._exceptions, src.endpoint_url, src.access_key) == (
        "client",
        "exceptions",
        "http://gw:7070",
        "AK",
    )
    assert made["session"] == {
        "aws_access_key_id": "AK",
        "aws_secret_access_key": "SK",
        "aws_session_token": "T",
        "region_name": "r",
    }
    assert made["client"] == ("s3", {"endpoint_url": "http://gw:7070", "config": made["client"][1]["config"]})
    assert made["config"] == {
        "retries": {"total_max_attempts": 1},
        "s3": {"addressing_style": "path"},
        "connect_timeout": 10,
        "read_timeout": 60,
    }


def test_empty_settings_are_left_to_boto3(monkeypatch):
    made = fake_boto3(monkeypatch)
    S3Source("b", "c", endpoint_url="", region="", access_key="", secret_key="", session_token="")
    assert made["session"] == {
        "aws_access_key_id": None,
        "aws_secret_access_key": None,
        "aws_session_token": None,
        "region_name": None,
    }
    assert made["client"][1]["endpoint_url"] is None and made["config"]["s3"] == {}


def test_a_given_client_needs_no_boto3(monkeypatch):
    monkeypatch.setattr(s3, "import_boto3", lambda: pytest.fail("imported"))
    assert source().client.calls == []


def test_the_clock_is_the_servers_once_known(monkeypatch):
    src = source()
    monkeypatch.setattr(s3.time, "time", lambda: 42.0)
    assert src.now() == 42.0
    src._now = 0.0  # a server clock of 0 is a time
    assert src.now() == 0.0
    src._now = 7.5
    assert src.now() == 7.5


@pytest.mark.parametrize("code", sorted(s3.RETRY_CODES))
def test_each_retry_code_is_retried(code):
    assert source()._retryable(client_error(code, 400))


@pytest.mark.parametrize("status", [500, 501, 503, 599, 429])
def test_5xx_and_429_are_retried(status):
    assert source()._retryable(client_error("Whatever", status))


@pytest.mark.parametrize("status", [400, 404, 403, 428, 430, 200, None])
def test_other_statuses_are_not_retried(status):
    assert not source()._retryable(client_error("Whatever", status))


@pytest.mark.parametrize(
    "name",
    [
        "EndpointConnectionError",
        "ConnectionClosedError",
        "ReadTimeoutError",
        "ConnectTimeoutError",
        "ResponseStreamingError",
        "ProtocolError",
    ],
)
def test_connection_errors_are_retried_by_their_class_name(name):
    assert source()._retryable(type(name, (Exception,), {})())
    assert not source()._retryable(type(name + "X", (Exception,), {})())


@pytest.mark.parametrize("code", sorted(s3.AUTH_CODES))
def test_each_auth_code_names_the_access_key_never_the_secret(code):
    src = source(access_key="AKIA1", secret_key="shh", endpoint_url="http://gw")
    assert str(src._explain(client_error(code, 400), "list")) == (
        "S3 refused the credentials for bucket 'b' at http://gw (%s, access key AKIA1): check "
        "s3.access_key/s3.secret_key or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY" % code
    )


def test_a_403_without_a_code_is_refused_credentials_from_the_environment():
    assert str(source()._explain(client_error("", 403), "GET")) == (
        "S3 refused the credentials for bucket 'b' (403, access key from the environment/instance profile): check "
        "s3.access_key/s3.secret_key or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY"
    )


@pytest.mark.parametrize("exc", [NoCredentialsError(), PartialCredentialsError(provider="env", cred_var="x")])
def test_missing_credentials_are_named(exc):
    assert str(source()._explain(exc, "list")) == (
        "no S3 credentials for bucket 'b': set s3.access_key/s3.secret_key or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY"
    )


@pytest.mark.parametrize("code", ["", "404", "NotFound"])
def test_a_404_of_a_listing_is_a_missing_bucket_but_not_of_a_get(code):
    src = source(endpoint_url="http://gw")
    assert str(src._explain(client_error(code, 404), "list")) == "S3 bucket 'b' does not exist at http://gw"
    assert str(src._explain(client_error(code, 404, "gone"), "GET")) == (
        "S3 GET of s3://b/ckpt/ failed: %s gone" % (code or "ClientError")
    )


def test_no_such_bucket_is_a_missing_bucket_whatever_the_call():
    assert str(source()._explain(client_error("NoSuchBucket", 404), "GET")) == "S3 bucket 'b' does not exist"
    assert str(source()._explain(client_error("NoSuchKey", 404, "k"), "list")) == (
        "S3 list of s3://b/ckpt/ failed: NoSuchKey k"
    )


def test_a_retryable_error_that_outlasts_the_attempts_names_their_count():
    src = source(retrying=Retrying(attempts=3))
    assert str(src._explain(client_error("SlowDown", 503), "list")) == (
        "S3 endpoint kept failing for bucket 'b' after 3 attempts: SlowDown"
    )
    src.endpoint_url = "http://gw"
    assert str(src._explain(EndpointConnectionError(endpoint_url="http://gw"), "list")) == (
        "S3 endpoint at http://gw kept failing for bucket 'b' after 3 attempts: EndpointConnectionError"
    )


def test_any_other_error_is_its_code_and_first_200_characters():
    src = source()
    long = "m" * 250
    assert (
        str(src._explain(client_error("Odd", 400, long), "list")) == "S3 list of s3://b/ckpt/ failed: Odd " + "m" * 200
    )
    exc = ValueError("plain")
    assert str(src._explain(exc, "GET")) == "S3 GET of s3://b/ckpt/ failed: ValueError plain"


def test_calls_are_retried_and_their_errors_explained():
    client = Client(failures=[client_error("SlowDown", 503)], pages=[page()])
    src = source(client=client)
    assert src._call("list", client.list_objects_v2, Bucket="b") == page()
    assert src.slept == [0.2]  # one full-jitter wait: min(5, 0.2 * 2) * 0.5
    client.failures = [client_error("AccessDenied", 403)]
    with pytest.raises(GateError, match="refused the credentials"):
        src._call("list", client.list_objects_v2)
    for raised in (GateError("as is"), KeyError("k")):
        client.failures = [raised]
        with pytest.raises(type(raised)) as caught:
            src._call("list", client.list_objects_v2)
        assert caught.value is raised

    class WithResponse(Exception):
        response = {"Error": {"Code": "Odd", "Message": "odd"}}

    client.failures = [WithResponse()]
    with pytest.raises(GateError) as caught:
        src._call("GET", client.list_objects_v2)
    assert str(caught.value) == "S3 GET of s3://b/ckpt/ failed: Odd odd"
    client.failures = [EndpointConnectionError(endpoint_url="x")] * 6  # botocore's own, without a response
    with pytest.raises(GateError, match="after 6 attempts: EndpointConnectionError"):
        src._call("list", client.list_objects_v2)


def test_pages_follow_tokens_to_the_end_and_take_the_first_servers_clock():
    client = Client(
        pages=[
            page(["k1"], token="t1", date="Thu, 01 Jan 2026 02:00:00 GMT"),
            page(["k2"], token="t2", date="Thu, 01 Jan 2026 03:00:00 GMT"),
            page(["k3"]),
        ]
    )
    src = source(client=client)
    got = list(src.pages("p/"))
    assert [p["Contents"][0]["Key"] for p in got] == ["k1", "k2", "k3"]
    assert [c[1] for c in client.calls] == [
        {"Bucket": "b", "Prefix": "p/", "MaxKeys": 1000},
        {"Bucket": "b", "Prefix": "p/", "MaxKeys": 1000, "ContinuationToken": "t1"},
        {"Bucket": "b", "Prefix": "p/", "MaxKeys": 1000, "ContinuationToken": "t2"},
    ]
    assert src.now() == T0.timestamp() + 7200


def test_a_page_without_a_clock_leaves_it_to_the_next():
    client = Client(pages=[page(["k1"], token="t1"), page(["k2"], date="Thu, 01 Jan 2026 01:00:00 GMT")])
    src = source(client=client)
    list(src.pages("p/"))
    assert src.now() == T0.timestamp() + 3600


def test_pages_stop_at_the_first_when_asked_or_when_not_truncated_or_without_a_token():
    for first in (
        page(["k"], token="t", truncated=False),
        page(["k"], token=None, truncated=True),
    ):
        client = Client(pages=[first, page(["x"])])
        assert len(list(source(client=client).pages("p/", delimiter="/", max_keys=8))) == 1
        assert client.calls == [("list", {"Bucket": "b", "Prefix": "p/", "MaxKeys": 8, "Delimiter": "/"})]
    client = Client(pages=[page(["k"], token="t"), page(["x"])])
    assert len(list(source(client=client).pages("p/", first_only=True))) == 1


@pytest.mark.parametrize(
    "date, expected",
    [("Thu, 01 Jan 2026 00:00:00 GMT", T0.timestamp()), ("not a date", None), ("", None), (None, None)],
)
def test_the_server_time_is_the_date_header_when_it_parses(date, expected):
    assert s3._server_time({"ResponseMetadata": {"HTTPHeaders": {"date": date}}}) == expected
    assert s3._server_time({}) is None
    assert s3._server_time({"ResponseMetadata": {}}) is None


def test_a_date_older_pythons_cannot_parse_is_no_clock(monkeypatch):
    """Before Python 3.10 parsedate_to_datetime raised TypeError where it now raises ValueError."""
    import email.utils

    def old_parse(date):
        raise TypeError("'NoneType' object is not iterable")

    monkeypatch.setattr(email.utils, "parsedate_to_datetime", old_parse)
    assert s3._server_time({"ResponseMetadata": {"HTTPHeaders": {"date": "garbage"}}}) is None


def test_step_names_are_the_step_prefixes_and_others_the_rest():
    client = Client(
        pages=[
            page(["ckpt/latest.txt"], ["ckpt/global_step_1/", "ckpt/misc/"], token="t"),
            page(["ckpt/global_step_3"], ["ckpt/global_step_20/"]),
        ]
    )
    src = source(client=client)
    assert src.step_names() == ["global_step_1", "global_step_20"]
    assert src.others == ["misc", "latest.txt", "global_step_3"]
    assert client.calls[0][1] == {"Bucket": "b", "Prefix": "ckpt/", "MaxKeys": 1000, "Delimiter": "/"}
    one = source("ckpt/global_step_4", client=Client())
    assert one.step_names() == ["global_step_4"] and one.client.calls == []


def test_a_head_start_is_nothing_to_do():
    src = source()
    assert (src.head_start("global_step_1"), src.end_head_start(), src.client.calls) == (None, None, [])


def test_a_scan_aggregates_each_step_and_names_the_others():
    later = T0 + datetime.timedelta(seconds=30)
    client = Client(
        pages=[
            page(["ckpt/global_step_1/a/b/c.distcp", "ckpt/global_step_1/a/", "ckpt/global_step_1/rng.pt"], token="t"),
            page(
                ["ckpt/global_step_2/x.pt", "ckpt/global_step_2/a/b/", "ckpt/latest.txt", "ckpt/global_step_9/"],
                token="t2",
            ),
            page(["ckpt/latest.txt", "ckpt/global_step_8", "ckpt/global_step_3/y.pt"], size=4, when=later),
        ]
    )
    src = source(client=client)
    steps = list(src.scan())
    assert [f.name for f in steps] == ["global_step_1", "global_step_2", "global_step_3"]
    one, two, three = steps
    assert (one.files, one.bytes, one.newest, one.dirs) == (2, 2, T0.timestamp(), {"a", "a/b"})
    assert one.sizes == {"a/b": {"c.distcp": 1}}
    assert (two.files, two.dirs) == (1, {"a/b"})  # a marker adds its own name only
    assert (three.files, three.bytes, three.newest, three.dirs) == (1, 4, later.timestamp(), set())
    assert src.others == ["latest.txt", "global_step_9", "global_step_8"]
    assert client.calls[0][1] == {"Bucket": "b", "Prefix": "ckpt/", "MaxKeys": 1000}


def test_a_scan_of_one_step_lists_its_prefix_and_a_walk_takes_the_first_step():
    client = Client(pages=[page(["ckpt/global_step_5/a/b/c/d.pt"])])
    src = source("ckpt/global_step_5", client=client)
    (facts,) = src.scan()
    assert facts.dirs == {"a", "a/b", "a/b/c"}
    assert client.calls[0][1]["Prefix"] == "ckpt/global_step_5/"
    client = Client(pages=[page(["ckpt/global_step_5/x.pt", "ckpt/global_step_6/y.pt"])])
    facts = source(client=client).walk("global_step_5")
    assert (facts.name, facts.files) == ("global_step_5", 1)
    assert client.calls[0][1]["Prefix"] == "ckpt/global_step_5/"
    facts = source(client=Client(pages=[page()])).walk("global_step_5")
    assert isinstance(facts, StepFacts) and (facts.name, facts.files) == ("global_step_5", 0)


def test_a_scan_stops_adding_parents_at_one_already_known():
    client = Client(
        pages=[page(["ckpt/global_step_1/a/x.pt", "ckpt/global_step_1/a/b/c/y.pt", "ckpt/global_step_1/z.pt"])]
    )
    (facts,) = source(client=client).scan()
    assert facts.dirs == {"a", "a/b", "a/b/c"} and facts.files == 3


def test_a_directory_listing_names_files_and_prefixes_below_it():
    client = Client(
        pages=[page(["ckpt/global_step_1/actor/", "ckpt/global_step_1/actor/w.pt"], ["ckpt/global_step_1/actor/dcp/"])]
    )
    src = source(client=client)
    assert src.list_dir("global_step_1", "actor") == (["w.pt"], ["dcp"])
    assert client.calls[0][1] == {
        "Bucket": "b",
        "Prefix": "ckpt/global_step_1/actor/",
        "MaxKeys": 1000,
        "Delimiter": "/",
    }
    client = Client(pages=[page(["ckpt/global_step_1/rng.pt"], ["ckpt/global_step_1/actor/"])])
    assert source(client=client).list_dir("global_step_1", "") == (["rng.pt"], ["actor"])
    assert client.calls[0][1]["Prefix"] == "ckpt/global_step_1/"


def test_an_iter_directory_is_probed_with_one_short_page():
    client = Client(pages=[page(["ckpt/global_step_1/actor/iter_1/.metadata"], token="t"), page(["never"])])
    src = source(client=client)
    assert src.iter_dir_names("global_step_1", "actor/iter_1") == ([".metadata"], [])
    assert client.calls == [
        ("list", {"Bucket": "b", "Prefix": "ckpt/global_step_1/actor/iter_1/", "MaxKeys": 8, "Delimiter": "/"})
    ]


def test_a_probe_is_the_shallow_listing():
    client = Client(pages=[page([], ["ckpt/global_step_1/actor/"]), page(["ckpt/global_step_1/actor/w.pt"])])
    facts = source(client=client).probe("global_step_1")
    assert facts.name == "global_step_1" and facts.dirs == {"actor"} and facts.files == 1


def test_list_files_is_every_object_but_directory_markers():
    client = Client(
        pages=[
            page(["ckpt/global_step_1/a/", "ckpt/global_step_1/a/w.pt"], token="t", size=3),
            page(["ckpt/global_step_1/r.pt"]),
        ]
    )
    assert source(client=client).list_files("global_step_1") == [("a/w.pt", 3), ("r.pt", 1)]
    assert client.calls[0][1]["Prefix"] == "ckpt/global_step_1/"


def test_the_tail_is_a_ranged_get_with_the_total_size():
    key = "ckpt/global_step_1/a/.metadata"
    client = Client(objects={key: {"Body": io.BytesIO(b"789"), "ContentRange": "bytes 7-9/10"}})
    src = source(client=client)
    assert src.read_tail("global_step_1", "a/.metadata", 3) == (b"789", 10)
    assert client.calls == [("get", {"Bucket": "b", "Key": key, "Range": "bytes=-3"})]
    client.objects[key] = {"Body": io.BytesIO(b"789")}  # no range in the answer: the body is the whole
    assert src.read_tail("global_step_1", "a/.metadata", 3) == (b"789", 3)
    client.objects[key] = {"Body": io.BytesIO(b"78"), "ContentRange": "bytes 0-1/*"}
    assert src.read_tail("global_step_1", "a/.metadata", 3) == (b"78", 2)


def test_a_tail_of_an_empty_object_is_empty_and_other_failures_are_explained():
    client = Client(failures=[client_error("InvalidRange", 416, op="GetObject")])
    src = source(client=client)
    assert src.read_tail("global_step_1", "e", 8) == (b"", 0)
    client.failures = [client_error("Odd", 400, "odd", op="GetObject")]
    with pytest.raises(GateError) as caught:
        src.read_tail("global_step_1", "e", 8)
    assert str(caught.value) == "S3 ranged GET of s3://b/ckpt/global_step_1/e of s3://b/ckpt/ failed: Odd odd"
    client.failures = [client_error("", 404, "gone", op="GetObject")]  # a 404 of a GET is no missing bucket
    with pytest.raises(GateError) as caught:
        src.read_tail("global_step_1", "e", 8)
    assert str(caught.value) == "S3 ranged GET of s3://b/ckpt/global_step_1/e of s3://b/ckpt/ failed: ClientError gone"
    client.failures = [KeyError("k")]
    with pytest.raises(KeyError):
        src.read_tail("global_step_1", "e", 8)
    client.failures = [client_error("SlowDown", 503, op="GetObject")] * 2
    client.objects["ckpt/global_step_1/e"] = {"Body": io.BytesIO(b"ab"), "ContentRange": "bytes 0-1/2"}
    assert src.read_tail("global_step_1", "e", 8) == (b"ab", 2)  # retried


def test_a_whole_object_is_read_up_to_a_limit_or_opened_closing():
    key = "ckpt/global_step_1/w.pt"
    client = Client(objects={key: {"Body": io.BytesIO(b"0123456789")}}, failures=[client_error("SlowDown", 503)])
    src = source(client=client)
    assert src.read_all("global_step_1", "w.pt", 4) == b"0123"
    assert client.calls[-1] == ("get", {"Bucket": "b", "Key": key})
    body = io.BytesIO(b"data")
    client.objects[key] = {"Body": body}
    with src.open_file("global_step_1", "w.pt") as handle:
        assert handle.read() == b"data"
    assert body.closed
    client.failures = [client_error("AccessDenied", 403, op="GetObject")]
    with pytest.raises(GateError, match="refused the credentials"):
        src.open_file("global_step_1", "w.pt")
    client.failures = [client_error("Odd", 400, "odd", op="GetObject")]
    with pytest.raises(GateError, match=r"^S3 GET of s3://b/ckpt/ failed: Odd odd$"):
        src.read_all("global_step_1", "w.pt", 4)


def test_a_5xx_without_a_code_is_no_missing_bucket():
    assert str(source()._explain(client_error("", 500), "list")) == (
        "S3 endpoint kept failing for bucket 'b' after 6 attempts: ClientError"
    )


def test_a_step_whose_name_sorts_after_its_neighbours_keys_is_its_own_step():
    """S3 sorts "global_step_1-a/" before "global_step_1/" ("-" is below "/"): a later step may sort lower."""
    client = Client(pages=[page(["ckpt/global_step_1-a/y.pt", "ckpt/global_step_1/x.pt"])])
    steps = list(source(client=client).scan())
    assert [(f.name, f.files) for f in steps] == [("global_step_1-a", 1), ("global_step_1", 1)]


def test_list_files_keeps_keys_ending_in_characters_below_the_slash():
    client = Client(pages=[page(["ckpt/global_step_1/w.", "ckpt/global_step_1/v-", "ckpt/global_step_1/d/"])])
    assert source(client=client).list_files("global_step_1") == [("w.", 1), ("v-", 1)]


def test_a_directory_listing_reads_every_page():
    client = Client(pages=[page(["ckpt/global_step_1/a.pt"], token="t"), page(["ckpt/global_step_1/b.pt"])])
    assert source(client=client).list_dir("global_step_1", "") == (["a.pt", "b.pt"], [])
