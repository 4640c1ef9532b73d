"""Excel workbooks made for tests (and benchmarks/bench_data_edges.py): a real .xlsx of any
size written as a stream, the same with its zip directory understating what it holds, and
zips of many tiny parts whose end record understates how many. A sheet of repeated rows
deflates about 300:1, so a few hundred KB unpack to many MB."""

from __future__ import annotations

import struct
import zipfile
import zlib
from pathlib import Path

_PARTS = {
    "[Content_Types].xml": '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
    '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
    '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
    '<Default Extension="xml" ContentType="application/xml"/>'
    '<Override PartName="/xl/workbook.xml" '
    'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>'
    '<Override PartName="/xl/worksheets/sheet1.xml" '
    'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/></Types>',
    "_rels/.rels": '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
    '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
    '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/'
    'officeDocument" Target="xl/workbook.xml"/></Relationships>',
    "xl/workbook.xml": '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
    '<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" '
    'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships">'
    '<sheets><sheet name="Sheet1" sheetId="1" r:id="rId1"/></sheets></workbook>',
    "xl/_rels/workbook.xml.rels": '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
    '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
    '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/'
    'worksheet" Target="worksheets/sheet1.xml"/></Relationships>',
}
SHEET = "xl/worksheets/sheet1.xml"


def workbook(path: Path, rows: int, columns: int = 10, *, compression: int = zipfile.ZIP_DEFLATED) -> Path:
    """An .xlsx of `rows` rows of numbers under a header row (about 26 bytes of XML a cell),
    its parts deflated, or stored as they are (`zipfile.ZIP_STORED`)."""
    letters = [chr(65 + i) for i in range(columns)]
    with zipfile.ZipFile(path, "w", compression, compresslevel=6) as archive:
        for name, text in _PARTS.items():
            archive.writestr(name, text)
        with archive.open(SHEET, "w") as sheet:
            sheet.write(
                b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
                b'<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>'
            )
            head = "".join(f'<c r="{c}1" t="inlineStr"><is><t>col_{c.lower()}</t></is></c>' for c in letters)
            sheet.write(f'<row r="1">{head}</row>'.encode())
            for r in range(2, rows + 2):
                cells = "".join(f'<c r="{c}{r}"><v>{r % 97}</v></c>' for c in letters)
                sheet.write(f'<row r="{r}">{cells}</row>'.encode())
            sheet.write(b"</sheetData></worksheet>")
    return path


def bomb(path: Path, unpacked_mb: int, columns: int = 10) -> Path:
    """A valid .xlsx whose sheet is `unpacked_mb` MB of the same row over and over (rows need no
    `r` attribute), made in seconds: 483 MB compress to about 1.4 MB."""
    cells = "".join(f"<c><v>{n}</v></c>" for n in range(columns))
    block = (f"<row>{cells}</row>" * 4096).encode()
    head = "".join(f'<c t="inlineStr"><is><t>col_{n}</t></is></c>' for n in range(columns))
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        for name, text in _PARTS.items():
            archive.writestr(name, text)
        with archive.open(SHEET, "w", force_zip64=True) as sheet:
            sheet.write(
                b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
                b'<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>'
                + f"<row>{head}</row>".encode()
            )
            for _ in range(unpacked_mb * 2**20 // len(block)):
                sheet.write(block)
            sheet.write(b"</sheetData></worksheet>")
    return path


def understated(path: Path, declared: int = 1000) -> Path:
    """The workbook with its sheet's uncompressed size declared as `declared` bytes, in the
    local header and the central directory, and its CRC-32 that of the sheet's first `declared`
    bytes: a bomb that hides what it holds. Python's zipfile stops reading a part at its
    declared size and checks the CRC of what it read, so it finds nothing wrong; fastexcel
    reads the part to the end of its compressed bytes, every row."""
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo(SHEET)
        crc = zlib.crc32(archive.read(SHEET)[:declared])
    data = bytearray(path.read_bytes())
    struct.pack_into("<I", data, info.header_offset + 14, crc)  # local header: CRC-32,
    struct.pack_into("<I", data, info.header_offset + 22, declared)  # uncompressed size
    name = SHEET.encode()
    at = 0
    while True:
        at = data.find(b"PK\x01\x02", at)
        assert at >= 0, "no central directory entry for the sheet"
        length = struct.unpack_from("<H", data, at + 28)[0]
        if bytes(data[at + 46 : at + 46 + length]) == name:
            struct.pack_into("<I", data, at + 16, crc)  # central directory: CRC-32,
            struct.pack_into("<I", data, at + 24, declared)  # uncompressed size
            break
        at += 4
    path.write_bytes(bytes(data))
    return path


def many_parts(path: Path, parts: int, *, declared: int | None = None, zip64: bool = False) -> Path:
    """A zip of `parts` empty parts (written as bytes, 200,000 in a fraction of a second) whose
    end record says it has `declared` (default: `parts`); with `zip64`, in a ZIP64 end record,
    the classic one saying 0xFFFF. zipfile reads the whole central directory whatever count
    the end record gives: 200,000 parts are 10 MB of directory and about 100 MB of objects."""
    count = parts if declared is None else declared
    local, central, at = [], [], 0
    for i in range(parts):
        name = b"p%d" % i
        local.append(struct.pack("<4s5H3I2H", b"PK\x03\x04", 20, 0, 0, 0, 0, 0, 0, 0, len(name), 0) + name)
        central.append(
            struct.pack("<4s6H3I5H2I", b"PK\x01\x02", 20, 20, 0, 0, 0, 0, 0, 0, 0, len(name), 0, 0, 0, 0, 0, at) + name
        )
        at += 30 + len(name)
    directory = b"".join(central)
    end = b""
    if zip64:
        record = at + len(directory)
        end = struct.pack("<4sQ2H2I4Q", b"PK\x06\x06", 44, 45, 45, 0, 0, count, count, len(directory), at)
        end += struct.pack("<4sIQI", b"PK\x06\x07", 0, record, 1)
        end += struct.pack("<4s4H2IH", b"PK\x05\x06", 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0)
    else:
        end = struct.pack("<4s4H2IH", b"PK\x05\x06", 0, 0, count, count, len(directory), at, 0)
    path.write_bytes(b"".join(local) + directory + end)
    return path


def overlapping(path: Path, times: int) -> Path:
    """The zip with its central directory repeated `times` times: every part listed `times`
    times over the same bytes (the "overlapping" zip bomb's trick, without its kernel)."""
    data = path.read_bytes()
    end = data.rindex(b"PK\x05\x06")
    parts = struct.unpack_from("<H", data, end + 10)[0]
    size, start = struct.unpack_from("<II", data, end + 12)
    directory = data[start : start + size] * times
    record = struct.pack("<4s4H2IH", b"PK\x05\x06", 0, 0, parts * times, parts * times, len(directory), start, 0)
    path.write_bytes(data[:start] + directory + record)
    return path
