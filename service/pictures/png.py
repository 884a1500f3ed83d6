"""The PNG renderer of a :class:`~service.pictures.scene.Scene`, with Pillow: the scene scaled
to the asked width, styled by :data:`~service.pictures.scene.STYLES` (hit targets left out),
texts in Pillow's built-in scalable font."""

from __future__ import annotations

import io
import threading

from PIL import Image, ImageDraw, ImageFont

from .scene import Scene, style_of

#: Fonts by pixel size, per thread (a FreeType face is not to be shared by threads drawing
#: at once): loading one costs more than drawing a board's texts.
_fonts = threading.local()


def _font(size: int) -> ImageFont.FreeTypeFont:
    cache = getattr(_fonts, "by_size", None)
    if cache is None:
        cache = _fonts.by_size = {}
    font = cache.get(size)
    if font is None:
        if len(cache) >= 64:
            cache.clear()
        font = cache[size] = ImageFont.load_default(size=size)
    return font


def _colour(value):
    return None if value in (None, "none", "transparent") else value


def render_png(scene: Scene, width: int) -> bytes:
    """The PNG of ``scene``, ``width`` pixels wide (the height keeps the scene's aspect)."""
    out = io.BytesIO()
    render_image(scene, width).save(out, format="PNG", optimize=False, compress_level=6)
    return out.getvalue()


def render_image(scene: Scene, width: int, height: int | None = None) -> Image.Image:
    """``scene`` drawn on an RGB image ``width`` pixels wide and ``height`` high (default:
    the scene's aspect; a taller image is white below the scene)."""
    scale = width / scene.width
    if height is None:
        height = max(1, round(scene.height * scale))
    image = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(image)

    def px(v: float) -> float:
        return v * scale

    for prim in scene.items:
        st = style_of(prim)
        if st.get("hidden"):
            continue
        fill, stroke = _colour(st.get("fill")), _colour(st.get("stroke"))
        stroke_w = max(1, round(px(st.get("width", 0.0)))) if stroke else 0
        if prim.kind == "line":
            if stroke:
                draw.line([(px(prim.x), px(prim.y)), (px(prim.x2), px(prim.y2))],
                          fill=stroke, width=stroke_w)
        elif prim.kind == "rect":
            if fill or stroke:
                draw.rectangle([px(prim.x), px(prim.y), px(prim.x + prim.w) - 1,
                                px(prim.y + prim.h) - 1], fill=fill,
                               outline=stroke, width=stroke_w)
        elif prim.kind == "circle":
            r = max(px(prim.r), 1.0)
            draw.ellipse([px(prim.x) - r, px(prim.y) - r, px(prim.x) + r, px(prim.y) + r],
                         fill=fill or stroke)
        else:
            size = max(6, round(px(st.get("size", 0.3))))
            font = _font(size)
            anchor = {"middle": "mm", "start": "lm", "end": "rm"}[prim.anchor]
            if st.get("halo"):
                outline, outline_fill = max(1, round(px(st["halo"]))), "#ffffff"
            else:  # a bold text is drawn thicker with its own colour
                outline = 1 if st.get("weight") == "bold" and size >= 14 else 0
                outline_fill = fill
            draw.text((px(prim.x), px(prim.y)), prim.text, fill=fill or "#000000", font=font,
                      anchor=anchor, stroke_width=outline, stroke_fill=outline_fill)
    return image
