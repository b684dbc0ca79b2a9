#!/bin/sh
# Runs one of Kafka's tools on pykafka-client: kafka-run-class.sh SCRIPT [ARGS...] (SCRIPT: kafka-topics.sh, ...,
# or Kafka's class for it, e.g. kafka.admin.TopicCommand) execs
# `python -m pykafka_client.cli.kafka_scripts SCRIPT ARGS...` with the Python this package is installed in,
# the first of:
#   1. $PYKAFKA_PYTHON;
#   2. the interpreter of the prefix whose site-packages holds this directory
#      (<prefix>/lib/pythonX.Y/site-packages/... -> <prefix>/bin/pythonX.Y: a virtualenv or a system install);
#   3. the interpreter `pykafka kafka-path` recorded in ../python-path;
#   4. the .venv of a checkout that holds this directory (the editable install `./dev setup` makes);
#   5. python3 on PATH, if it imports pykafka_client.
script=$1
shift
self=$(readlink -f -- "$0" 2>/dev/null) || self=$0
home=$(cd -- "$(dirname -- "$self")/.." && pwd -P)

runnable() { [ -n "$1" ] && [ -x "$1" ] && [ ! -d "$1" ]; }

python=${PYKAFKA_PYTHON:-}
if [ -z "$python" ]; then
    case $home in
        */lib/python*/site-packages/*)
            prefix=${home%%/lib/python*/site-packages/*}
            version=${home#"$prefix"/lib/}
            version=${version%%/*}
            for candidate in "$prefix/bin/$version" "$prefix/bin/python3" "$prefix/bin/python"; do
                if runnable "$candidate"; then python=$candidate; break; fi
            done
            ;;
    esac
fi
if [ -z "$python" ] && [ -f "$home/python-path" ]; then
    IFS= read -r recorded < "$home/python-path" || true
    if runnable "$recorded"; then python=$recorded; fi
fi
if [ -z "$python" ]; then
    dir=$home
    while [ "$dir" != / ] && [ -n "$dir" ]; do
        if runnable "$dir/.venv/bin/python"; then python=$dir/.venv/bin/python; break; fi
        dir=$(dirname -- "$dir")
    done
fi
if [ -z "$python" ]; then
    if command -v python3 >/dev/null 2>&1 && python3 -c 'import pykafka_client' >/dev/null 2>&1; then
        python=python3
    else
        echo "$script: cannot find the Python that pykafka-client is installed in (looked next to $home);" \
             "run \`pykafka kafka-path\` once, or set PYKAFKA_PYTHON=/path/to/python" >&2
        exit 1
    fi
fi
exec "$python" -m pykafka_client.cli.kafka_scripts "$script" "$@"
