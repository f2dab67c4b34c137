#!/usr/bin/env bash
# Run every example through `toolgate check` and compare the exit status,
# the violation codes and (where given) a failure line with what the table
# below expects. One line per payload; exits 1 on any mismatch, and when a
# payload under examples/ is missing from the table.
#
# The binary: $TOOLGATE if set, else `cargo build -p toolgate-cli` and
# ${CARGO_TARGET_DIR:-target}/debug/toolgate.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"

if [ -z "${TOOLGATE:-}" ]; then
    (cd "$root" && cargo build -q -p toolgate-cli) || exit 2
    target="${CARGO_TARGET_DIR:-$root/target}"
    case "$target" in /*) ;; *) target="$root/$target" ;; esac
    TOOLGATE="$target/debug/toolgate"
fi

# payload (under examples/) | exit | violation codes, sorted (- for none) | a failure line that must appear
# The policy is policy.yaml beside the payload; without one, no --policy.
table='
payload.json                           | 1 | duplicate_argument_key |
allowlist/payload.json                 | 0 | - |
allowlist/payload-fail.json            | 1 | not_allowed | tool call '\''delete_database'\'' is not an allowed tool
required-params/payload.json           | 0 | - |
required-params/payload-fail.json      | 1 | missing_required_param | tool call '\''create_issue'\'' is missing required parameter '\''body'\''
schema/payload.json                    | 0 | - |
schema/payload-fail.json               | 1 | schema_violation | '\''customer_email'\'' is not a valid '\''email'\''
openai-format/payload.json             | 0 | - |
openai-format/payload-fail.json        | 1 | not_allowed,schema_violation,unexpected_arguments | arguments for tool '\''get_weather'\'' do not match its schema: '\''city'\'' is a required property
nested-tool-calls/payload.json         | 0 | - |
nested-tool-calls/payload-fail.json    | 1 | malformed_arguments,missing_required_param |
expected-tools/payload.json            | 0 | - |
expected-tools/payload-fail.json       | 1 | missing_expected_tools | Missing expected tools: send_email
forbidden-tools/payload.json           | 0 | - |
forbidden-tools/payload-fail.json      | 1 | forbidden,used_forbidden_tools | Used forbidden tools: delete_user
forbidden-tools/payload-lookalike.json | 1 | forbidden,used_forbidden_tools | Used forbidden tools: delete_user
tool-count/payload.json                | 0 | - |
tool-count/payload-fail.json           | 1 | too_few_tools | Too few tools: 1 < 2
tool-count/payload-too-many.json       | 1 | too_many_tools | Too many tools: 5 > 3
order/payload.json                     | 0 | - |
order/payload-fail.json                | 1 | order_mismatch | Tool order incorrect
arguments/payload.json                 | 0 | - |
arguments/payload-fail.json            | 1 | arg_mismatch | Tool '\''search'\'' arg '\''limit'\'' mismatch
argument-authorization/payload.json    | 0 | - |
argument-authorization/payload-fail.json | 1 | unauthorized_argument | tool call '\''send_email'\'': every recipient must be inside example.com
combined/payload.json                  | 0 | - |
combined/payload-fail.json             | 1 | forbidden,missing_expected_tools,order_mismatch,used_forbidden_tools | Missing expected tools: send_email
'

trim() { local s="$1"; s="${s#"${s%%[![:space:]]*}"}"; printf '%s' "${s%"${s##*[![:space:]]}"}"; }

mismatches=0
listed=" "
while IFS='|' read -r payload want_exit want_codes want_text; do
    payload="$(trim "$payload")"
    [ -z "$payload" ] && continue
    want_exit="$(trim "$want_exit")"
    want_codes="$(trim "$want_codes")"
    want_text="$(trim "$want_text")"
    listed="$listed$payload "

    file="$here/$payload"
    policy="$(dirname "$file")/policy.yaml"
    args=(check --compact)
    [ -f "$policy" ] && args+=(--policy "$policy")
    out="$("$TOOLGATE" "${args[@]}" "$file" 2>&1)"
    got_exit=$?
    got_codes="$(printf '%s' "$out" | grep -o '"code":"[a-z_]*"' | sed 's/"code":"\(.*\)"/\1/' | sort -u | paste -sd, -)"
    [ -z "$got_codes" ] && got_codes=-

    problem=""
    [ "$got_exit" != "$want_exit" ] && problem="exit $got_exit, expected $want_exit"
    [ "$got_codes" != "$want_codes" ] && problem="${problem:+$problem; }codes $got_codes, expected $want_codes"
    if [ -n "$want_text" ] && ! printf '%s' "$out" | grep -qF -- "$want_text"; then
        problem="${problem:+$problem; }no failure line containing: $want_text"
    fi
    if [ -z "$problem" ]; then
        printf 'ok        %-40s exit %s  %s\n' "$payload" "$got_exit" "$got_codes"
    else
        printf 'MISMATCH  %-40s %s\n' "$payload" "$problem"
        mismatches=$((mismatches + 1))
    fi
done <<< "$table"

# Every payload on disk must be in the table.
cd "$here" || exit 2
for file in payload*.json */payload*.json; do
    case "$listed" in
        *" $file "*) ;;
        *)
            printf 'MISMATCH  %-40s not in the table of check-all.sh\n' "$file"
            mismatches=$((mismatches + 1))
            ;;
    esac
done

if [ "$mismatches" -ne 0 ]; then
    echo "check-all: $mismatches mismatch(es)"
    exit 1
fi
echo "check-all: every example gave the expected verdict"
