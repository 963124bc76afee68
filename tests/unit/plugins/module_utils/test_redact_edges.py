# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Redaction at its edges (issue 26's surviving mutants of redact.py): lengths and entropy pinned from both
sides, several secrets in one text, names that measure or point at a secret, quoted values."""

import pytest
from ansible_collections.rlark.ops.plugins.module_utils.redact import (
    MASK,
    is_high_entropy_token,
    is_secret_name,
    looks_secret,
    redact,
    redact_text,
    secret_reason,
    value_rule,
)

AWS = "AKIAIOSFODNN7EXAMPLE"
GITHUB = "ghp_Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"
# 32 distinct characters (upper, lower, digits, not hex): entropy 5 bits, a token at any length from 32 up.
DISTINCT = "AbCdEfGhIjKlMnOpQrStUvWxYz234567"


def test_two_secrets_of_different_rules_in_one_text_are_both_masked():
    # The rule listed first (AWS) matches first in the text, the later one (GitHub) after it, and the other way.
    assert redact_text("id %s then %s" % (AWS, GITHUB)) == "id %s then %s" % (MASK, MASK)
    assert redact_text("%s then id %s" % (GITHUB, AWS)) == "%s then id %s" % (MASK, MASK)


@pytest.mark.parametrize("length, token", [(31, False), (32, True), (33, True), (64, True)])
def test_a_high_entropy_token_is_at_least_32_characters(length, token):
    text = (DISTINCT * 2)[:length]
    assert is_high_entropy_token(text) is token


def test_entropy_of_exactly_4_bits_is_a_token_and_just_under_is_not():
    sixteen = "AbCdEfGhIjKlMn23"  # 16 distinct characters, each twice: exactly 4.0 bits per character
    assert is_high_entropy_token(sixteen * 2) is True
    # one more character, or one character in place of another: just under 4 bits
    assert (
        is_high_entropy_token(sixteen * 2 + "A") is False
        and is_high_entropy_token("AA" + sixteen[2:] + sixteen) is False
    )


@pytest.mark.parametrize(
    "name", ["DB_PASSWORD_TIME_OUT", "GITHUB_TOKEN_END_POINT", "API_SECRET_TIME_OUT", "TOKEN_TIME_OUT"]
)
def test_a_name_whose_last_two_words_make_a_measure_or_a_pointer_holds_no_secret(name):
    # TIME_OUT reads as timeout, END_POINT as endpoint: the name measures or points, it holds nothing.
    assert is_secret_name(name) is False
    assert redact({name: "30s"}) == {name: "30s"}


@pytest.mark.parametrize(
    "text, masked",
    [
        ('OPENAI_KEY="abcdefghij0123456789"', "OPENAI_KEY=%s" % MASK),  # 20 characters: a token
        ('OPENAI_KEY="abcdefghij012345678"', 'OPENAI_KEY="abcdefghij012345678"'),  # 19: not
        ("DB_PASSWORD='true'", "DB_PASSWORD='true'"),  # a switch, quoted
        ('DB_PASSWORD="hunter22"', "DB_PASSWORD=%s" % MASK),
    ],
)
def test_a_quoted_value_is_judged_without_its_quotes(text, masked):
    assert redact_text(text) == masked


def test_a_long_repetitive_run_is_no_token():
    assert is_high_entropy_token("Aa1" * 11) is False  # 33 characters of 1.6 bits each


def test_a_token_needs_lower_case_letters_too():
    assert is_high_entropy_token(DISTINCT.upper()) is False  # upper case and digits only
    assert is_high_entropy_token(DISTINCT) is True


def test_a_long_number_under_a_key_name_is_masked_like_its_text():
    # YAML reads an unquoted long number as an int: it is judged as the text it was written as.
    assert redact({"OPENAI_KEY": 12345678901234567890123}) == {"OPENAI_KEY": MASK}
    assert redact({"OPENAI_KEY": "12345678901234567890123"}) == {"OPENAI_KEY": MASK}


def test_only_the_value_of_a_name_value_pair_is_judged_by_the_pair_s_name():
    pair = {"name": "DB_PASSWORD", "value": "hunter22", "version": "v2-beta", "apiVersion": "v1-alpha"}
    assert redact(pair) == {"name": "DB_PASSWORD", "value": MASK, "version": "v2-beta", "apiVersion": "v1-alpha"}


def test_looks_secret_says_whether_redaction_would_change_the_text():
    assert looks_secret("token %s" % GITHUB) is True
    assert looks_secret("step 12 loss=0.1") is False and looks_secret(12) is False


@pytest.mark.parametrize("name", ["WEBHOOK_SECRET_FILE", "SLACK_HOOK_TOKEN_PATH", "WEBHOOK_TOKEN_COUNT_WINDOW"])
def test_a_webhook_name_that_points_at_or_measures_a_secret_holds_none(name):
    # Only a name ending in URL is a webhook's credential itself; ..._FILE points at one, ..._COUNT_... measures.
    assert is_secret_name(name) is False
    assert is_secret_name("SLACK_WEBHOOK_URL") is True


def test_a_token_needs_digits_too():
    letters = "AbCdEfGhIjKlMnOpQrStUvWxYzaBcDeF"  # 32 distinct letters, both cases, no digit
    assert is_high_entropy_token(letters) is False
    assert is_high_entropy_token(letters[:-1] + "7") is True


def test_an_empty_value_under_a_secret_name_is_no_secret():
    assert secret_reason("DB_PASSWORD", "") is None
    assert secret_reason("DB_PASSWORD", "hunter22") == "its name says it holds a password (rule password-name)"


class Tagged(str):
    """A str subclass, as ansible-core 2.19 hands tagged template results to plugins."""


def test_empty_values_are_kept_whatever_their_string_type():
    data = {"DB_PASSWORD": Tagged(""), "API_TOKEN": "", "credentials": {"user": "", "enabled": False, "ttl": None}}
    assert redact(data) == {
        "DB_PASSWORD": "",
        "API_TOKEN": "",
        "credentials": {"user": "", "enabled": False, "ttl": None},
    }
    assert redact({"credentials": {"user": "ops"}}) == {"credentials": {"user": MASK}}


@pytest.mark.parametrize("text, kept", [("pw=ab", True), ("pw=abc", False)])
def test_text_shorter_than_six_characters_is_left_alone(text, kept):
    assert redact_text(text) == (text if kept else "pw=" + MASK)


@pytest.mark.parametrize("spaces, kept", [(1, True), (33, True), (34, False)])
def test_an_ssh_public_key_body_is_kept_when_its_type_is_within_40_characters(spaces, kept):
    # sshPublicKey: "ssh-rsa <base64>" is public. The type must end within the 40 characters before the body.
    body = DISTINCT * 2
    text = "ssh-rsa" + " " * spaces + body
    assert redact_text(text) == (text if kept else "ssh-rsa" + " " * spaces + MASK)


def test_a_value_assigning_a_secret_name_is_reported_by_that_name_s_rule():
    assert value_rule("DB_PASSWORD=hunter22") == "password-name"
    assert (
        secret_reason(None, "export DB_PASSWORD=hunter22") == "its name says it holds a password (rule password-name)"
    )


def test_an_authorization_scheme_spelled_with_a_character_that_folds_to_ascii_is_masked():
    # re's IGNORECASE matches the long s (U+017F) to "s", where str.lower() keeps it: non-ASCII text is scanned.
    assert redact_text("sent Ba\u017fic dXNlcjpwYXNzd29yZA== to it") == "sent Ba\u017fic %s to it" % MASK
    assert value_rule("sent Ba\u017fic dXNlcjpwYXNzd29yZA==") == "auth-header"


def test_a_token_needs_upper_case_letters_too():
    assert is_high_entropy_token(DISTINCT.lower()) is False  # lower case and digits only


@pytest.mark.parametrize("name", ["AUTHTOKEN", "ATOKEN", "X_ACCESSTOKEN"])
def test_a_word_ending_in_token_names_a_token(name):
    assert is_secret_name(name) is True


def test_an_unquoted_value_is_judged_whole_even_when_it_starts_and_ends_alike():
    assert redact_text("DB_PASSWORD=x12345x") == "DB_PASSWORD=" + MASK  # "12345" alone would be harmless
    assert redact_text("DB_PASSWORD='12345'") == "DB_PASSWORD='12345'"


@pytest.mark.parametrize("value", [None, 12, 3.5, True])
def test_redact_text_returns_what_is_no_text_as_it_is(value):
    assert redact_text(value) is value


def test_a_harmless_assignment_before_a_secret_one_does_not_hide_it():
    assert value_rule("step=3 DB_PASSWORD=hunter22") == "password-name"


def test_a_token_outside_ascii_counts_its_own_digits():
    # The non-ASCII branch: Arabic-Indic digits are digits; there is no ASCII 0-9 in this token.
    assert is_high_entropy_token("AbCdEfGhIjKlMnOpQrStUvWxYz" + "\u0662\u0663\u0664\u0665\u0666\u0667") is True


@pytest.mark.parametrize("text", ["https://ops:!s3cretpw@example.com/x", "DB_PASSWORD=!hunter22"])
def test_looks_secret_whatever_the_secret_s_first_character(text):
    # "!" sorts before the "*" of the mask: redacted text is then greater than the original, not smaller.
    assert looks_secret(text) is True


def test_a_secret_of_a_later_rule_earlier_in_the_text_is_masked_first():
    # Slack comes after AWS in the rule table but first in this text; neither is long enough for high-entropy.
    slack = "xoxb-1234567890-abcdefghij"
    assert redact_text("%s then id %s" % (slack, AWS)) == "%s then id %s" % (MASK, MASK)
