#!/usr/bin/env bash
# Installs the system packages docjobs runs as processes; does nothing when they are present.
set -euo pipefail
need=()
command -v pdftotext >/dev/null || need+=(poppler-utils)
command -v tesseract >/dev/null || need+=(tesseract-ocr tesseract-ocr-eng)
# The webhook verification test runs node, and npm installs its package on first use;
# Debian ships npm apart from nodejs, so either may be missing alone.
command -v node >/dev/null || need+=(nodejs)
command -v npm >/dev/null || need+=(npm)
[ ${#need[@]} -eq 0 ] && exit 0
sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}"
