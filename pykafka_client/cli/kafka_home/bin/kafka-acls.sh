#!/bin/sh
# Kafka's kafka-acls.sh on pykafka-client (see kafka-run-class.sh for the Python it runs).
self=$(readlink -f -- "$0" 2>/dev/null) || self=$0
exec "$(dirname -- "$self")/kafka-run-class.sh" kafka-acls.sh "$@"
