#!/usr/bin/env python3
"""Composes the demo scene: people from registry-package photos (insightface's
group photo t1.jpg, face_recognition's obama3.jpg and biden.jpg, scikit-image's
astronaut) walking slowly past a fixed camera over scikit-image's coffee photo.
Real faces, so the demo shows the privacy stage at work.

  demo_scene.py GRAY_DIR WIDTH HEIGHT FRAMES OUT_RAW

GRAY_DIR holds the photos as raw 8-bit gray (NAME.gray, sizes below), made by
scripts/make-demo-clip with GStreamer. Writes FRAMES frames of raw I420 (the
photos' luma, neutral chroma) to OUT_RAW; the scene loops seamlessly (every
walker is back where it started after the last frame).
"""
import sys

import numpy as np

SIZES = {"t1": (1280, 886), "obama3": (480, 781), "biden": (400, 909), "astronaut": (512, 512), "coffee": (600, 400)}


def load(folder, name):
    w, h = SIZES[name]
    return np.fromfile(f"{folder}/{name}.gray", np.uint8).reshape(h, w).astype(np.float32)


def scaled(img, height):
    """Nearest-neighbour resize to `height` rows, keeping the aspect ratio (fast, good enough for a demo)."""
    h, w = img.shape
    width = max(1, int(round(w * height / h)))
    ys = (np.arange(height) * h / height).astype(int)
    xs = (np.arange(width) * w / width).astype(int)
    return img[ys][:, xs]


def paste(frame, sprite, x, y):
    H, W = frame.shape
    h, w = sprite.shape
    x0, y0, x1, y1 = max(0, x), max(0, y), min(W, x + w), min(H, y + h)
    if x1 > x0 and y1 > y0:
        frame[y0:y1, x0:x1] = sprite[y0 - y:y1 - y, x0 - x:x1 - x]


def main(folder, W, H, frames, out):
    W, H, frames = int(W), int(H), int(frames)
    coffee = load(folder, "coffee")
    # Scaled to cover the whole frame, then cropped to it.
    cover = scaled(coffee, max(H, -(-W * coffee.shape[0] // coffee.shape[1])))
    background = cover[:H, :W] * 0.85
    t1 = load(folder, "t1")
    # Walkers: (sprite, height on screen, y, start x, pixels per loop to the right); each crosses the
    # frame width plus its own width exactly once per loop, so the scene loops without a jump.
    walkers = []
    for name, height, y, phase in (("obama3", 0.95, 0.05, 0.0), ("astronaut", 0.45, 0.45, 0.35),
                                   ("biden", 0.8, 0.15, 0.6)):
        walkers.append((scaled(load(folder, name), int(H * height)), int(H * y), phase))
    group = scaled(t1, int(H * 0.5))
    rng = np.random.default_rng(7)
    with open(out, "wb") as f:
        for i in range(frames):
            t = i / frames
            frame = background.copy()
            paste(frame, group, int(W * 0.02 + 60 * np.sin(2 * np.pi * t)), int(H * 0.48))
            for sprite, y, phase in walkers:
                span = W + sprite.shape[1]
                x = int(((t + phase) % 1.0) * span) - sprite.shape[1]
                paste(frame, sprite, x, y)
            frame += rng.normal(0, 2.0, frame.shape)
            f.write(np.clip(frame, 0, 255).astype(np.uint8).tobytes())
            chroma = np.full((H // 2, W // 2), 128, np.uint8).tobytes()
            f.write(chroma)
            f.write(chroma)


if __name__ == "__main__":
    main(*sys.argv[1:6])
