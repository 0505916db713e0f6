#!/usr/bin/env bash
# Installs the system packages docjobs runs as processes; does nothing when they are present.
set -euo pipefail
need=()
command -v pdftotext >/dev/null || need+=(poppler-utils)
command -v tesseract >/dev/null || need+=(tesseract-ocr tesseract-ocr-eng)
command -v node >/dev/null || need+=(nodejs npm)
[ ${#need[@]} -eq 0 ] && exit 0
sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}"
