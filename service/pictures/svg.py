"""The SVG renderer of a :class:`~service.pictures.scene.Scene`: a standalone document with a
``viewBox`` (no fixed pixel size), one element per primitive carrying its classes and
``data-*`` attributes, and a small embedded style sheet made from
:data:`~service.pictures.scene.STYLES`."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from .scene import STYLES, Prim, Scene

SVG_NS = "http://www.w3.org/2000/svg"


def _num(v: float) -> str:
    """A coordinate with at most three decimals and no trailing zeros."""
    return f"{v:.3f}".rstrip("0").rstrip(".") or "0"


def style_sheet() -> str:
    """The CSS of every class in :data:`STYLES` (``.boxfish-board`` scoped, so that an inlined
    picture styles nothing else on its page)."""
    rules = [".boxfish-board text{font-family:Helvetica,Arial,sans-serif;"
             "text-anchor:middle;dominant-baseline:central}",
             ".boxfish-board text.value{pointer-events:none}",
             ".boxfish-board line{stroke-linecap:round}",
             ".boxfish-board line.slot{cursor:pointer}",
             ".boxfish-board rect.legal{cursor:pointer}"]
    for key, props in STYLES.items():
        kind, cls = key.split(".", 1)
        decl = []
        for name, value in props.items():
            if name == "fill":
                decl.append(f"fill:{value}")
            elif name == "stroke":
                decl.append(f"stroke:{value}")
            elif name == "width":
                decl.append(f"stroke-width:{_num(value)}")
            elif name == "size":
                decl.append(f"font-size:{_num(value)}px")
            elif name == "weight":
                decl.append(f"font-weight:{value}")
            elif name == "halo":
                decl.append(f"paint-order:stroke;stroke:#ffffff;stroke-width:{_num(value)};"
                            "stroke-linejoin:round")
            elif name == "dash":
                decl.append(f"stroke-dasharray:{_num(value)} {_num(value)}")
        if decl:
            rules.append(f".boxfish-board {kind}.{cls}{{{';'.join(decl)}}}")
    return "".join(rules)


def _element(prim: Prim) -> ET.Element:
    attrs = {"class": " ".join(prim.classes)}
    if prim.kind == "line":
        attrs.update(x1=_num(prim.x), y1=_num(prim.y), x2=_num(prim.x2), y2=_num(prim.y2))
    elif prim.kind == "rect":
        attrs.update(x=_num(prim.x), y=_num(prim.y), width=_num(prim.w), height=_num(prim.h))
    elif prim.kind == "circle":
        attrs.update(cx=_num(prim.x), cy=_num(prim.y), r=_num(prim.r))
    else:
        attrs.update(x=_num(prim.x), y=_num(prim.y))
        if prim.anchor != "middle":
            attrs["style"] = f"text-anchor:{prim.anchor}"
    for key, value in prim.data:
        attrs[f"data-{key}"] = value
    el = ET.Element(prim.kind, attrs)
    if prim.kind == "text":
        el.text = prim.text
    return el


def render_svg(scene: Scene) -> bytes:
    """The SVG document of ``scene`` (UTF-8, with an XML declaration). The root is
    ``<svg class="boxfish-board" data-game=... data-serial=...>``."""
    root = ET.Element("svg", {
        "xmlns": SVG_NS, "class": "boxfish-board", "data-game": scene.game,
        "data-serial": str(scene.serial),
        "viewBox": f"0 0 {_num(scene.width)} {_num(scene.height)}"})
    style = ET.SubElement(root, "style")
    style.text = style_sheet()
    root.extend(_element(p) for p in scene.items)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True)
