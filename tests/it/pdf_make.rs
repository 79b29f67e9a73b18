//! Writing PDFs for the tests and benchmarks, in plain PDF syntax: ordinary
//! ones (pages of Latin text in Helvetica, pages of Chinese text in a CID
//! font with a `ToUnicode` map, so a reader gets the characters back), and
//! hostile ones (a page tree claiming a million pages, objects nested 100,000
//! deep, a stream inflating to gigabytes, encrypted, truncated). Every byte
//! is made here, so every fixture is explained by the code that writes it.
//! Also compiled into `benches/` (by path) to put PDFs in generated vaults.

#![allow(dead_code, reason = "the tests and the benchmarks each use a part")]

use std::fmt::Write as _;
use std::io::Write as _;

/// A PDF from its objects (numbered from 1 in order; each the text between
/// `N 0 obj` and `endobj`), with a correct cross-reference table. `trailer`
/// is added to the trailer dictionary (`/Root 1 0 R` is always there).
pub(crate) fn pdf_of(objects: &[Vec<u8>], trailer: &str) -> Vec<u8> {
    let mut out: Vec<u8> = b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n".to_vec();
    let mut offsets = Vec::new();
    for (i, object) in objects.iter().enumerate() {
        offsets.push(out.len());
        writeln!(out, "{} 0 obj", i + 1).unwrap();
        out.extend_from_slice(object);
        out.extend_from_slice(b"\nendobj\n");
    }
    let xref = out.len();
    write!(out, "xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).unwrap();
    for offset in offsets {
        writeln!(out, "{offset:010} 00000 n ").unwrap();
    }
    write!(
        out,
        "trailer\n<< /Size {} /Root 1 0 R {trailer} >>\nstartxref\n{xref}\n%%EOF\n",
        objects.len() + 1
    )
    .unwrap();
    out
}

fn stream(dict: &str, data: &[u8]) -> Vec<u8> {
    let mut object = format!("<< {dict} /Length {} >>\nstream\n", data.len()).into_bytes();
    object.extend_from_slice(data);
    object.extend_from_slice(b"\nendstream");
    object
}

/// A string in PDF literal syntax (Latin-1 text; `\`, `(` and `)` escaped).
fn literal(text: &str) -> String {
    let mut out = String::from("(");
    for c in text.chars() {
        match c {
            '\\' | '(' | ')' => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 256 => out.push(c),
            _ => out.push('?'),
        }
    }
    out.push(')');
    out
}

/// A PDF with one page per entry of `pages`, each page's lines drawn one
/// under the other: lines of ASCII in Helvetica, lines holding any other
/// character in a CID font whose codes are the characters' UTF-16 units and
/// whose `ToUnicode` map names each one.
pub(crate) fn text_pdf(pages: &[&[&str]]) -> Vec<u8> {
    // 1 catalog, 2 pages, 3 Helvetica, 4 Type0, 5 CID font, 6 descriptor, 7 ToUnicode,
    // then each page and its content.
    let mut wide: Vec<u16> = pages
        .iter()
        .flat_map(|lines| lines.iter())
        .filter(|line| !line.is_ascii())
        .flat_map(|line| line.encode_utf16())
        .collect();
    wide.sort_unstable();
    wide.dedup();
    let mut cmap = String::from(
        "/CIDInit /ProcSet findresource begin\n12 dict begin\nbegincmap\n/CIDSystemInfo << /Registry (Adobe) \
         /Ordering (UCS) /Supplement 0 >> def\n/CMapName /Adobe-Identity-UCS def\n/CMapType 2 def\n1 \
         begincodespacerange\n<0000> <FFFF>\nendcodespacerange\n",
    );
    for chunk in wide.chunks(100) {
        writeln!(cmap, "{} beginbfchar", chunk.len()).unwrap();
        for unit in chunk {
            writeln!(cmap, "<{unit:04X}> <{unit:04X}>").unwrap();
        }
        cmap.push_str("endbfchar\n");
    }
    cmap.push_str("endcmap\nCMapName currentdict /CMap defineresource pop\nend\nend\n");
    let first_page = 8;
    let kids: Vec<String> = (0..pages.len()).map(|i| format!("{} 0 R", first_page + 2 * i)).collect();
    let mut objects: Vec<Vec<u8>> = vec![
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        format!("<< /Type /Pages /Kids [{}] /Count {} >>", kids.join(" "), pages.len()).into_bytes(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>".to_vec(),
        b"<< /Type /Font /Subtype /Type0 /BaseFont /STSong-Light /Encoding /Identity-H /DescendantFonts [5 0 R] \
          /ToUnicode 7 0 R >>"
            .to_vec(),
        b"<< /Type /Font /Subtype /CIDFontType0 /BaseFont /STSong-Light /CIDSystemInfo << /Registry (Adobe) \
          /Ordering (Identity) /Supplement 0 >> /FontDescriptor 6 0 R /DW 1000 >>"
            .to_vec(),
        b"<< /Type /FontDescriptor /FontName /STSong-Light /Flags 4 /FontBBox [0 -200 1000 900] /ItalicAngle 0 \
          /Ascent 880 /Descent -120 /CapHeight 700 /StemV 80 >>"
            .to_vec(),
        stream("", cmap.as_bytes()),
    ];
    for lines in pages {
        let at = objects.len() + 1;
        objects.push(
            format!(
                "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R /F2 4 0 R \
                 >> >> /Contents {} 0 R >>",
                at + 1
            )
            .into_bytes(),
        );
        let mut content = String::new();
        for (i, line) in lines.iter().enumerate() {
            let y = 740 - 20 * i as i64;
            if line.is_ascii() {
                writeln!(content, "BT /F1 12 Tf 72 {y} Td {} Tj ET", literal(line)).unwrap();
            } else {
                let hex: String = line.encode_utf16().map(|unit| format!("{unit:04X}")).collect();
                writeln!(content, "BT /F2 12 Tf 72 {y} Td <{hex}> Tj ET").unwrap();
            }
        }
        objects.push(stream("", content.as_bytes()));
    }
    pdf_of(&objects, "")
}

/// A page tree that claims `count` pages, its one `Kids` entry a page.
pub(crate) fn claimed_pages_pdf(count: u64) -> Vec<u8> {
    pdf_of(
        &[
            b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
            format!("<< /Type /Pages /Kids [3 0 R] /Count {count} >>").into_bytes(),
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>".to_vec(),
        ],
        "",
    )
}

/// A page tree of `count` real pages and no `/Count` to catch: the pages
/// must be walked to be counted.
pub(crate) fn many_pages_pdf(count: usize) -> Vec<u8> {
    let kids: Vec<String> = (0..count).map(|i| format!("{} 0 R", i + 3)).collect();
    let mut objects = vec![
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        format!("<< /Type /Pages /Kids [{}] >>", kids.join(" ")).into_bytes(),
    ];
    objects.extend((0..count).map(|_| b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>".to_vec()));
    pdf_of(&objects, "")
}

/// A page tree `depth` levels deep (each `Pages` node's one kid the next
/// node, the last one a page with text), and an object of arrays and one of
/// dictionaries nested `depth` deep that the catalog points at.
pub(crate) fn deep_pdf(depth: usize) -> Vec<u8> {
    let mut arrays = "[".repeat(depth);
    arrays.push_str(&"]".repeat(depth));
    let mut dicts = "<< /A ".repeat(depth);
    dicts.push('1');
    dicts.push_str(&" >>".repeat(depth));
    // 1 catalog, 2 arrays, 3 dictionaries, 4 Helvetica, 5 content, 6.. the tree.
    let content = b"BT /F1 12 Tf 72 720 Td (deep inside the tree) Tj ET";
    let mut objects = vec![
        b"<< /Type /Catalog /Pages 6 0 R /Deep 2 0 R /Dicts 3 0 R >>".to_vec(),
        arrays.into_bytes(),
        dicts.into_bytes(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_vec(),
        stream("", content),
    ];
    for level in 0..depth {
        let (own, kid) = (6 + level, 7 + level);
        let parent = if level == 0 { String::new() } else { format!("/Parent {} 0 R ", own - 1) };
        objects.push(format!("<< /Type /Pages {parent}/Kids [{kid} 0 R] /Count 1 >>").into_bytes());
    }
    objects.push(
        format!(
            "<< /Type /Page /Parent {} 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 4 0 R >> >> \
             /Contents 5 0 R >>",
            5 + depth
        )
        .into_bytes(),
    );
    pdf_of(&objects, "")
}

/// A page whose content stream inflates to `mebibytes` MiB of zeros from a
/// few hundred bytes a MiB: a compression bomb. Made without compressing
/// it all: one MiB of zeros deflated and ended by a sync flush (byte
/// aligned, its back-references only ever reaching zeros) is repeated, then
/// a final empty block and the Adler-32 of that many zeros close the stream.
pub(crate) fn bomb_pdf(mebibytes: usize) -> Vec<u8> {
    let mut compress = flate2::Compress::new(flate2::Compression::best(), false);
    let mut chunk = Vec::with_capacity(8192);
    compress.compress_vec(&vec![0u8; 1 << 20], &mut chunk, flate2::FlushCompress::Sync).unwrap();
    let mut deflated = vec![0x78, 0x01];
    for _ in 0..mebibytes {
        deflated.extend_from_slice(&chunk);
    }
    deflated.extend_from_slice(&[0x03, 0x00]);
    // Adler-32 of zeros: a stays 1, b grows by 1 a byte.
    let b = ((mebibytes as u64) << 20) % 65521;
    deflated.extend_from_slice(&((b << 16) as u32 | 1).to_be_bytes());
    pdf_of(
        &[
            b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(),
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>".to_vec(),
            stream("/Filter /FlateDecode", &deflated),
        ],
        "",
    )
}

/// A PDF whose trailer says it is encrypted with a user password (the
/// standard handler, revision 3, with an `/O` and `/U` no empty password opens).
pub(crate) fn encrypted_pdf() -> Vec<u8> {
    let o = "<".to_owned() + &"4F".repeat(32) + ">";
    let u = "<".to_owned() + &"55".repeat(32) + ">";
    pdf_of(
        &[
            b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(),
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>".to_vec(),
            format!("<< /Filter /Standard /V 2 /R 3 /Length 128 /P -4 /O {o} /U {u} >>").into_bytes(),
        ],
        "/Encrypt 4 0 R /ID [<0123456789ABCDEF0123456789ABCDEF> <0123456789ABCDEF0123456789ABCDEF>]",
    )
}

/// A page with no text on it (a scan would look like this to a reader).
pub(crate) fn blank_pdf() -> Vec<u8> {
    pdf_of(
        &[
            b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(),
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>".to_vec(),
            stream("", b"0 0 m 100 100 l S"),
        ],
        "",
    )
}
