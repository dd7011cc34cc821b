#!/usr/bin/env bash
# Lists the files of each held-out findings project (after `capture.sh setup`) into
# findings/fixtures/<project>.files, one path a line relative to the project, so the corpus
# test can answer the general reader's "is this a file of the task?" as the real project
# would, without committing the projects themselves. node_modules (a link out of the
# project) and .git are left out, as a task's links out are.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
H=/tmp/heldout
for project in debian-bin go-difflib-src golang-crypto itertools node-semver six slugify smallvec zerocopy; do
	(cd "$H/$project" && find . -path ./node_modules -prune -o -path ./.git -prune -o -type f -print |
		sed 's|^\./||' | LC_ALL=C sort) >"$HERE/findings/fixtures/$project.files"
done
