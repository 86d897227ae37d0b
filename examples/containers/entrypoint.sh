#!/bin/sh
# The entry point of every container of docker-compose.yml (docs/containers.md). It exports
# the mesh token from the compose secret as HERMES_MESH_TOKEN, the variable the core's mesh
# file names in token_env and the one `hermes-mesh actor` and examples/python/hermes_actor.py
# read, then runs the container's command in its place. The token is in neither the image nor
# the compose file. Also for one-off commands:
#   docker compose exec core sh examples/containers/entrypoint.sh hermes-mesh ps --dir /mesh
set -eu
if [ -z "${HERMES_MESH_TOKEN:-}" ]; then
  file="${HERMES_MESH_TOKEN_FILE:-/run/secrets/mesh_token}"
  if [ ! -r "$file" ]; then
    echo "entrypoint.sh: cannot read the mesh token at $file: the compose secret mesh_token must exist and be readable by this container's user (uid $(id -u), groups $(id -G))" >&2
    exit 1
  fi
  HERMES_MESH_TOKEN=$(cat "$file")
  export HERMES_MESH_TOKEN
fi
exec "$@"
