//! The five source documents, cited in full at the end of `index.html`.
//!
//! Sources of each citation: 000 from its publisher's record (IEEE ICCE 2018, Las Vegas,
//! pp. 1-3); 001 and 004 as 000 cites them (its references [2] and [1]); 003 from the post
//! itself (Kevin Closson's blog, author's replies dated July 2015); 002's copy names authors and
//! affiliation but no venue or year, and we say so rather than guess.

use trimlab_report::Reference;

pub fn references() -> Vec<Reference> {
    let r = |key: &str, citation: &str| Reference { key: key.into(), citation: citation.into() };
    vec![
        r("000", "Kitae Lee, Dong Hyun Kang, Daeho Jeong and Young Ik Eom. \"Lazy TRIM: Optimizing the Journaling Overhead caused by TRIM Commands on Ext4 File System.\" 2018 IEEE International Conference on Consumer Electronics (ICCE), Las Vegas, pp. 1-3, 2018."),
        r("001", "Choulseung Hyun, Jongmoo Choi, Donghee Lee and Sam H. Noh. \"To TRIM or Not to TRIM: Judicious TRIMing for Solid State Drives.\" Poster, 23rd ACM Symposium on Operating Systems Principles (SOSP), 2011."),
        r("002", "Juncheon Kim and Dongkun Shin (Sungkyunkwan University). \"Delayed TRIM for Reducing Trim Overhead.\" Venue and year are not stated in the copy used here (it cites work up to 2021; experiments on DaisyPlus OpenSSD)."),
        r("003", "Kevin Closson. \"Focusing on Ext4 and XFS TRIM Operations - Part I.\" Kevin Closson's Blog: Platforms, Databases, and Storage (kevinclosson.net), July 2015."),
        r("004", "Joohyun Kim, Haesung Kim, Seongjin Lee and Youjip Won. \"FTL Design for TRIM Command.\" Proc. 5th International Workshop on Software Support for Portable Storage (IWSSPS), pp. 7-12, 2010."),
    ]
}
