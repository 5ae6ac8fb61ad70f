# tests/scratch.sh: sourced by the test and bench scripts (tests/run/, tests/bench/):
# `scratch NAME` makes a fresh folder $TMPDIR/NAME.<random> (TMPDIR default /tmp), names it
# $dir, removes it when the script exits, and makes it the current folder.
scratch() {
  dir=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX") || exit 1
  trap 'rm -rf "$dir"' EXIT
  cd "$dir" || exit 1
}
