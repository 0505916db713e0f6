#!/usr/bin/env bash
# Installs the system packages docjobs runs as processes (poppler, tesseract);
# with --test also those only the tests run (node, npm). Does nothing when
# they are present. `make run` needs only the first: a machine that serves
# jobs gets no JavaScript toolchain.
set -euo pipefail
test_tools=false
case "${1:-}" in
  "") ;;
  --test) test_tools=true ;;
  *) echo "usage: $0 [--test]" >&2; exit 2 ;;
esac
need=()
command -v pdftotext >/dev/null || need+=(poppler-utils)
command -v tesseract >/dev/null || need+=(tesseract-ocr tesseract-ocr-eng)
if $test_tools; then
  # The webhook verification test and the OpenAPI check run node, and npm installs
  # their packages on first use; Debian ships npm apart from nodejs, so either may
  # be missing alone.
  command -v node >/dev/null || need+=(nodejs)
  command -v npm >/dev/null || need+=(npm)
fi
[ ${#need[@]} -eq 0 ] && exit 0
sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}"
