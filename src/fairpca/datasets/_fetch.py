"""Locate, verify and (optionally) download the files of the real data sets.

Every file a loader reads is pinned here by its path relative to the data
home, its SHA-256 and, where a stable public copy exists, the publisher's URL.
A file is used only after its checksum matched, whether it was found on disk
or just downloaded; nothing is silently repaired.

Where files are looked for, in order:

1. the ``data_home`` argument of the loader;
2. the ``FAIRPCA_DATA`` environment variable;
3. ``sklearn.datasets.get_data_home() / "fairpca"`` (``~/scikit_learn_data/fairpca``
   unless ``SCIKIT_LEARN_DATA`` says otherwise).

Inside the data home each file sits at the relative path given in
:data:`FILES`, e.g. ``adult/adult.data``.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import shutil
import tempfile
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

__all__ = ["FILES", "DataFile", "fetch_file", "get_data_home"]

logger = logging.getLogger(__name__)

_UCI = "https://archive.ics.uci.edu/ml/machine-learning-databases"
_FAIRML = (
    "https://raw.githubusercontent.com/molfat66/FairML/4198ab8abb915f46f34d496d8e55d42faf00936d"
)
_PROPUBLICA = (
    "https://raw.githubusercontent.com/propublica/compas-analysis/"
    "bafff5da3f2e45eca6c2d5055faad269defd135a"
)
# UCI publishes the credit-default data as an .xls file; this CSV re-save (with the label)
# equals Samadi et al.'s default_degree.csv cell for cell.
_EIGOPT = (
    "https://raw.githubusercontent.com/JunhuiShen/Fair-PCA-via-EigOpt/"
    "ea74a195001dc5491ea437b158daba0516d69f51"
)


@dataclass(frozen=True)
class DataFile:
    """A pinned data file.

    Attributes
    ----------
    path : str
        Location relative to the data home (``/``-separated).
    sha256 : str
        Expected SHA-256 of the file's bytes.
    url : str or None
        Where ``download=True`` fetches it from; ``None`` if there is no stable
        public copy (the file must then be placed by hand).
    """

    path: str
    sha256: str
    url: str | None


# Lee et al.'s (AAAI 2022) ten train/test splits of COMPAS, German credit and Adult, byte for
# byte from their repository nick-jhlee/fair-manifold-pca (commit cbd5c305ca40f380707c92f5cfd9
# df128e17017a, datasets/<Folder>/); registered without a URL: placed by hand.
_LEE2022_AUTHORS_SHA256 = {
    "COMPAS/train_0.csv": "a31668336c0f2b868b28bf049a11846db11538b09f7e242c662c69ce76e6725f",
    "COMPAS/train_1.csv": "f46a859ba4d4a1ae1a9c3273d7dacb8a761a7d1f7448d3be1b546c93478b1b97",
    "COMPAS/train_2.csv": "2b3da8cf37ea5416fb37ee14649622603b36ffa3660b0362f1d214cf0f0de5e6",
    "COMPAS/train_3.csv": "aa167e1d66a2a17a9985723ecb6282f177a78057644b8bd7b2edf905117b4071",
    "COMPAS/train_4.csv": "4a1b60eca14f1ee7b9e16431a2e0174ae22137b39b6242dd4f0b353277db7178",
    "COMPAS/train_5.csv": "95afe84136d2bc5f3b04fb9b54e42efbcfe2e0f2b1dafff0f9d3c09994d89449",
    "COMPAS/train_6.csv": "805d0730dcfec8c8a8bd46e36f2f5761d91a32306590cbc61f46db0fb816ca88",
    "COMPAS/train_7.csv": "d2ac95684b2c3bc5b8210bdc01a29dd67ad41c42df34e6d0caa945cd59c469dd",
    "COMPAS/train_8.csv": "63f946d6a221dc93ec1fbcc4add75d383ffd045a7e25826061aaa8fc609ce5a3",
    "COMPAS/train_9.csv": "dcb28637d60dce4ae3ac62c7478ec7cadb376a862579693b9d3a042cc14f1b17",
    "COMPAS/test_0.csv": "f80253b7b07c1f50bfd2d871e0fdee8b81bb990969645304b6c5c0c45708a482",
    "COMPAS/test_1.csv": "c1f7bc6de11466988933e931d86e0efa2b1301f235475d8726865335f41ca32e",
    "COMPAS/test_2.csv": "75dd462e70a65167e317efc4d484db1fbe99883f571846719cb09e23db52ea0e",
    "COMPAS/test_3.csv": "85c348f0f2ad7f79e3c2c4f9b677b40c379a4d7b1630254b1b5e630581b70c7b",
    "COMPAS/test_4.csv": "8679aaacf36e1f4df67cb925f6b860643ee1596c4012824a35293cef89d42f93",
    "COMPAS/test_5.csv": "0bba33fcd7c38448fe2b6474649428c90734afd00a77625959b6ed0d84bacf9d",
    "COMPAS/test_6.csv": "61ad1d8aa522f8153f5358501114fc4ab33c67890a194a712377356a5f8096ee",
    "COMPAS/test_7.csv": "0ea5cb0011941287b87df71327bcd212c84224568aa3a9398e0b07b7d27f6f48",
    "COMPAS/test_8.csv": "b4674f63079dd47f4b2b07566bbad879755861bb4036f2fc2df3ca15b1d5aea5",
    "COMPAS/test_9.csv": "d8db06c5753e1e5bbe3f8c76eed4066b775483dc617064e7b26afa35667df561",
    "German/train_0.csv": "4f27915ea8c13c9951d820e4f04d9ce6417a865fbddf8bfbe95bc7c69a612201",
    "German/train_1.csv": "b10673aaedb72db30bf77e656f7120215b468382edba13304831490d125c11a6",
    "German/train_2.csv": "cfedf6852023636bf5b99b3b06273dcd0df256b1fef9d0934344d0a975e572b9",
    "German/train_3.csv": "1393507a1876e931a2b2b1e14b5212169fe34f973bc6ba712e80031473a1e847",
    "German/train_4.csv": "c6b43b22c8c6b395419e900d8582df1462082df52e85f3c25a5d7f9a0486dc84",
    "German/train_5.csv": "6d63bd545e989d1dc3471536fc30d3307a2dbd5f38133ec6defb2cc2da951fa1",
    "German/train_6.csv": "f7a2e6572419c02924b687d1f1e265dae2b81a2aadd2a39dcde2759277ba236e",
    "German/train_7.csv": "69513d2a02ee5bd2ad416760053bc4e641221b86ae6c6f85ff79a0ae41caae4d",
    "German/train_8.csv": "aef6195d2d188e3fcc9d4a7b857fc2372662d82710181a60f42ff709c593a0a6",
    "German/train_9.csv": "a1a5a75bf4f4972831e5a000f3cad2803a47a38a219a8d5587bdb8df0a2ea004",
    "German/test_0.csv": "4d9ff7918187d6cf323e996d1ad830d9c084590179757a3de49cabb07b50e191",
    "German/test_1.csv": "36ce24c8007e14734b8a647a9df3fbdfd826e0e368f64b00436f991cacd2c43b",
    "German/test_2.csv": "17d55263af4b7e93b1a71a2e0656bd9114381d9bc68a0aedb3188e8f3ea136de",
    "German/test_3.csv": "80c9ae61aefdcf3ca361f6105447a824fc33ac96d5aaca6585607ae0de284f86",
    "German/test_4.csv": "a287727a4f87aac5901c4cf632e875b119cee29e29cfe1ae928dc8f561bbd928",
    "German/test_5.csv": "61d05aa179fa08a453f282d12258b84e7cf979f3956b73656875efe00d356f31",
    "German/test_6.csv": "ed06709f2cdb28626dae4a14cad150b27b17500c0aef4dd19e207f19e9abdc03",
    "German/test_7.csv": "2103679beef0283219072990ac9fb4dcd2b24fde6140532ab96a21f0f036979b",
    "German/test_8.csv": "a2b1e6ed74e1297503c0056621748aa8015ed8b38c11a0bdc1f6151fe948a2f1",
    "German/test_9.csv": "f697a5e819a48821881f371fcafb6cd35cd494b23d5a4f477f106b4f42a0ef24",
    "Adult/train_0.csv": "476f88c56b3bd61cb76cc7cb3df60833f2f2d700c4060fc27de23bbce0ffdb26",
    "Adult/train_1.csv": "9562fc52dc37cebd69bb85fd8a09861d6060afc5be92444f761dbeb16499d88b",
    "Adult/train_2.csv": "097c315c1610e79d5f907aed11cbd8605c1809edc79652003b9758159c5a3925",
    "Adult/train_3.csv": "a8d32c12e404023db475636d9c9ae9147e1f76d1c754df97e1200b34dbef1c93",
    "Adult/train_4.csv": "8ffaa3e9d21b7e8c29431a5370b524a9336bf8a199377e8b4766ac100555198c",
    "Adult/train_5.csv": "7a30cd553baea86fe0a31e9d302c6a17323b1dd34d42a240bf64739fdd97682c",
    "Adult/train_6.csv": "cda7dba767383cba0f270a1aade64a26f7312aa253ecb7e71e70eba2cfe78a82",
    "Adult/train_7.csv": "e75d1b68213c9f2c505a43fd25bee863fe990b340bb1bf4a30ec341f2debdf3b",
    "Adult/train_8.csv": "eb26d668693ce57ed9209d2b4d04dc94c03e9e5a719f0bc49cc44d12f5afd614",
    "Adult/train_9.csv": "577182887bafe26bec64e9f24c28be0cfce79a9cf5f9b5b803ac20d0f0a8148a",
    "Adult/test_0.csv": "dcfff70b8ec6e71f9992472299dacee25ac1ef5f16c1ebac742d7cb6137fd880",
    "Adult/test_1.csv": "33642a85e65c8ca0445ee13a303c82f9c5f96a0aec170300a3cbabcc05b07a73",
    "Adult/test_2.csv": "087ae36ed7516399a57f39fb66442968f1c9f6bbf9ae860857b833e7dbd1d579",
    "Adult/test_3.csv": "cdf10dcd431ab7177f6206629497622a68b86278afc185a9261d32a8392cee04",
    "Adult/test_4.csv": "210387fa65399afbf604aa650011e6a01b49b84f72a23c53538875b1fd11e95e",
    "Adult/test_5.csv": "1bb4181d7e95367b1f232091355dc50091a0157b8429913d8c90c36583e65230",
    "Adult/test_6.csv": "567d3efc46b719240dbfc00dd428d25d120f5f461f925f054adbe675385a496e",
    "Adult/test_7.csv": "16c94a7e2d3dc611c96f90503dda1adfad991593c7f957567db9ac454cea2c83",
    "Adult/test_8.csv": "0ca917316deb5f438ac1a5d0539fe01e48ef87d52efd106015c2391d6be22496",
    "Adult/test_9.csv": "a36e717009f5064944760364467ab04c5289f9c71029fa56c141f176bafb8752",
}

# Vu et al.'s (ICLR 2022) two data files that differ from the FairML copies, byte for byte from
# their repository hieuvt29/distributionally_robust_fair_pca (commit 725d4111cc55be3534522d78
# 4e008b4fb40750f3); registered without a URL: placed by hand.
_VU2022_AUTHORS_SHA256 = {
    "default_credit.csv": "30dca1ab34ffb63d7e41c21d0039d9f7f63a7518b52da55ace9ff9972e07a407",
    "SkillCraft_Data.csv": "7eb6775714ae549eeb6d7f333a7ada137e68b2d084bc179c812d59bb8188cd41",
}


def _fairml(folder, name, sha256):
    return DataFile(f"{folder}/{name}", sha256, f"{_FAIRML}/{name}")


#: Every file a loader may read, keyed by its path relative to the data home.
FILES = {
    f.path: f
    for f in [
        DataFile(
            "german_credit/german.data",
            "b21f3d81db8071257d5ff1deaeba1fd4303b62712e6fcc9715c7a86202cb5871",
            f"{_UCI}/statlog/german/german.data",
        ),
        DataFile(
            "adult/adult.data",
            "5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d",
            f"{_UCI}/adult/adult.data",
        ),
        DataFile(
            "adult/adult.test",
            "a2a9044bc167a35b2361efbabec64e89d69ce82d9790d2980119aac5fd7e9c05",
            f"{_UCI}/adult/adult.test",
        ),
        DataFile(
            "compas/compas-scores-two-years.csv",
            "c451db85908b2f7fef1d83203bedf6b71ecda0d5af468d82ae62178f91d0cc7d",
            f"{_PROPUBLICA}/compas-scores-two-years.csv",
        ),
        DataFile(
            "default_credit/default_degree_with_label.csv",
            "c58f7df737cb7953d9022cf9487cf8001c0417ae97bd308301ad733f20c88fc3",
            f"{_EIGOPT}/default_degree.csv",
        ),
        # A lossless repack of Samadi et al.'s 13232 img<k>.txt files; no public URL.
        DataFile(
            "lfw/lfw_samadi_1764px_grey_x3.npz",
            "8d82fe15c1491d0fb0ac401e2f136000cb0a687943647f4c1645532b33d65313",
            None,
        ),
        _fairml(
            "german_credit",
            "German_Credit_Data.csv",
            "83b94c63bcbf07db03db61a477af95eae8da51953712352f09f6eb339eedc548",
        ),
        _fairml(
            "compas",
            "Recidivism_Data.csv",
            "f11803a079602ac22bab31f07a3f9ea29edf3333f1aa2f9a719c1c299c7882d2",
        ),
        _fairml(
            "adult",
            "Adult_Income_Data.csv",
            "c0b050410f8fae8c67a9ab76925f0d415947affaaf0440357f7b6d32c0f22dea",
        ),
        _fairml(
            "default_credit",
            "Taiwanese_Credit_Data.csv",
            "e46136ef029367f0bd0fce5d9e24ee891f03e4670206a4d0f80f3266c81410f2",
        ),
        _fairml(
            "biodeg",
            "Biodeg_Data.csv",
            "bcc1eb1c9cb30129de1be68ad8502b9ebe1dd1318ecc21c6b7f82e11cd68871d",
        ),
        _fairml(
            "ecoli",
            "Ecoli_Data.csv",
            "e29c3c493050eb57a04c2049efbb4b1be39f2cb1ac306bf6e54ab3c4f061577c",
        ),
        _fairml(
            "energy",
            "Energy_Data.csv",
            "c0775d38abc0924625a5892d60377a65bd88a050eaa09d74ae05e75fdd53ed9a",
        ),
        _fairml(
            "image_segmentation",
            "Image_Seg_Data.csv",
            "34e32f22f7dc9e207cc6ed23ba3dda8bddce8896fb7e248afa14a1544b1237a7",
        ),
        _fairml(
            "letter",
            "Letter_Rec_Data.csv",
            "bb8d5659ee02881b6c32b4dd596f341ebc0e32f2b17ed37144c0d707e2b5b06e",
        ),
        _fairml(
            "magic_gamma",
            "Magic_Data.csv",
            "1bf9702e9fbf9233b5edd6fa7fe97237851da7d281ec1997a3a6ee8946967308",
        ),
        _fairml(
            "parkinsons_telemonitoring",
            "Parkinsons_Data.csv",
            "0178a10d70d80451ca60f280659939ff6a6d066b548bfbe2d0665f2f957314dc",
        ),
        _fairml(
            "pima_diabetes",
            "Pima_Diabetes_Data.csv",
            "531ed2bb1c6c3f72cfb9ff5c023b05a3c9344317c26d900d73b8baa2f2de113c",
        ),
        _fairml(
            "skillcraft",
            "SkillCraft_Data.csv",
            "64411ccce97a0b34d12fded7fed8acc689a5df78146ebabbc046cfe441f82c26",
        ),
        _fairml(
            "statlog_landsat",
            "Statlog_Data.csv",
            "11af5268f91819f21e2b2140a6ff98129435a96591db8b725f758c45e655732e",
        ),
        _fairml(
            "steel_plates",
            "Steel_Data.csv",
            "888d8fac75d3e0f72d2319e3c17d6f9c1c01d7ba91feba42f997e04db3de833d",
        ),
        _fairml(
            "wine_quality",
            "Wine_Quality_Data.csv",
            "aa9cb850c02f8c0725d11990f60efa1ecd8f5e1f4425045932c33457b05bfcf5",
        ),
        *(
            DataFile(f"authors/lee2022/{name}", sha256, None)
            for name, sha256 in _LEE2022_AUTHORS_SHA256.items()
        ),
        *(
            DataFile(f"authors/vu2022/{name}", sha256, None)
            for name, sha256 in _VU2022_AUTHORS_SHA256.items()
        ),
    ]
}

#: Verified files: (path, size, mtime_ns) -> sha256, so a file is hashed once per process.
_VERIFIED = {}


def get_data_home(data_home: str | os.PathLike[str] | None = None) -> Path:
    """The directory the data files are read from (it need not exist).

    Parameters
    ----------
    data_home : str or path-like, default=None
        Explicit directory. If ``None``, the ``FAIRPCA_DATA`` environment
        variable, else ``sklearn.datasets.get_data_home() / "fairpca"``.

    Returns
    -------
    path : pathlib.Path
    """
    if data_home is None:
        data_home = os.environ.get("FAIRPCA_DATA") or None
    if data_home is None:
        # Not sklearn.datasets.get_data_home(): it creates the directory as a side effect.
        base = os.environ.get("SCIKIT_LEARN_DATA", os.path.join("~", "scikit_learn_data"))
        return Path(base).expanduser() / "fairpca"
    if not isinstance(data_home, str | os.PathLike):
        raise TypeError(
            f"data_home must be a str or path-like, got {type(data_home).__name__} {data_home!r}."
        )
    return Path(data_home).expanduser()


def _sha256(path, chunk_size=1 << 20):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(chunk_size):
            digest.update(chunk)
    return digest.hexdigest()


def _verify(path, expected):
    """Raise a ``ValueError`` naming ``path`` unless its SHA-256 is ``expected``."""
    stat = path.stat()
    # The inode change time moves on every write and on every utime(), so a file
    # edited and given back its size and mtime is hashed again.
    key = (str(path.resolve()), stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)
    actual = _VERIFIED.get(key)
    if actual is None:
        actual = _sha256(path)
    if actual != expected:
        raise ValueError(
            f"checksum mismatch for data file {path}: sha256 {actual}, expected {expected}. "
            "The file is corrupted, truncated or a different version; replace it with the "
            "original (see the loader's docstring for its source)."
        )
    _VERIFIED[key] = actual


def _download(entry, target):
    """Fetch ``entry.url`` into ``target`` atomically, verifying the checksum first.

    The bytes go to ``TARGET.PID-XXXX.part`` beside ``target`` and are renamed
    into place once verified; the ``.part`` files of killed downloads (their
    pid dead) are removed first.
    """
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        _clean_partial_downloads(target)
        fd, tmp_name = tempfile.mkstemp(
            prefix=f"{target.name}.{os.getpid()}-", suffix=".part", dir=target.parent
        )
    except OSError as exc:
        raise OSError(
            f"cannot download data file {target.name} into the data home {target.parent}: "
            f"{exc.strerror or exc}. Point --data-home (the data_home argument) or "
            "FAIRPCA_DATA at a writable folder, or download the file elsewhere and put it at "
            f"{target}."
        ) from exc
    tmp = Path(tmp_name)
    logger.info("downloading %s to %s", entry.url, target)
    try:
        with os.fdopen(fd, "wb") as out:
            with urllib.request.urlopen(entry.url, timeout=60) as response:
                shutil.copyfileobj(response, out)
        actual = _sha256(tmp)
        if actual != entry.sha256:
            raise ValueError(
                f"checksum mismatch for {target.name} downloaded from {entry.url}: sha256 "
                f"{actual}, expected {entry.sha256}. The publisher's file changed or the "
                "download was corrupted; nothing was saved."
            )
        os.replace(tmp, target)
    except (urllib.error.URLError, OSError) as exc:
        raise OSError(
            f"could not download data file {target.name} from {entry.url}: {exc}. "
            f"Without a network, download it elsewhere and put it at {target}."
        ) from exc
    finally:
        tmp.unlink(missing_ok=True)


def _clean_partial_downloads(target):
    """Remove the ``.part`` files a killed download of ``target`` left (their pid is dead).

    Returns
    -------
    removed : list of pathlib.Path
    """
    pattern = re.compile(rf"^{re.escape(target.name)}\.(\d+)-.*\.part$")
    removed = []
    for path in target.parent.iterdir():
        match = pattern.match(path.name)
        if match is None or _pid_alive(int(match.group(1))):
            continue
        path.unlink(missing_ok=True)
        logger.warning("removed %s, left by a killed download", path)
        removed.append(path)
    return removed


def _pid_alive(pid):
    """Whether process ``pid`` exists on this host."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # someone else's process
        return True
    return pid > 0


def fetch_unpublished(relpath, source, *, data_home=None, download=False):
    """:func:`fetch_file` for a file registered without a URL (placed by hand).

    Parameters
    ----------
    relpath : str
        The file's path in the data home (a key of ``FILES``).
    source : str
        Where to copy it from, appended to the error when it is missing.
    data_home : str or path-like, default=None
    download : bool, default=False
        Nothing can be fetched; when True, the error also says so.

    Returns
    -------
    path : pathlib.Path
        The verified file.
    """
    try:
        return fetch_file(relpath, data_home=data_home)
    except FileNotFoundError as exc:
        refused = (
            " download=True cannot fetch it: no publisher URL is registered for the authors' files."
            if download
            else ""
        )
        raise FileNotFoundError(f"{exc}{refused} {source}") from exc


def fetch_file(relpath, *, data_home=None, download=False):
    """Path of a verified copy of a pinned data file.

    Parameters
    ----------
    relpath : str
        Key of :data:`FILES`, e.g. ``"adult/adult.data"``.
    data_home : str or path-like, default=None
        See :func:`get_data_home`.
    download : bool, default=False
        If the file is missing, fetch it from its publisher's URL (standard
        library ``urllib``), verify its SHA-256 and store it in the data home.

    Returns
    -------
    path : pathlib.Path
        The file, whose SHA-256 matched the pinned value.

    Raises
    ------
    FileNotFoundError
        If the file is missing and ``download`` is false (or it has no URL); the
        message says which file and where to put it.
    ValueError
        If the file's checksum does not match (the message names the file).
    OSError
        If a download failed.
    """
    if not isinstance(download, bool):
        raise TypeError(f"download must be a bool, got {type(download).__name__} {download!r}.")
    entry = FILES[relpath]
    home = get_data_home(data_home)
    path = home.joinpath(*entry.path.split("/"))
    if not path.is_file():
        if not download or entry.url is None:
            how = (
                f"download it from {entry.url} (or pass download=True; on the command "
                "line --download)"
                if entry.url is not None
                else "it has no public download URL; copy it from the fairpca test data"
            )
            raise FileNotFoundError(
                f"data file {entry.path!r} not found: expected at {path}. Put the file there "
                f"({how}), or point the data_home argument (--data-home on the command "
                "line) or the FAIRPCA_DATA environment variable at the directory holding the "
                "data set folders."
            )
        _download(entry, path)
    _verify(path, entry.sha256)
    return path
