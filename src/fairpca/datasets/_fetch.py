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
    """Fetch ``entry.url`` into ``target`` atomically, verifying the checksum first."""
    target.parent.mkdir(parents=True, exist_ok=True)
    logger.info("downloading %s to %s", entry.url, target)
    fd, tmp_name = tempfile.mkstemp(prefix=target.name + ".", suffix=".part", dir=target.parent)
    tmp = Path(tmp_name)
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
                f"download it from {entry.url} (or pass download=True)"
                if entry.url is not None
                else "it has no public download URL; copy it from the fairpca test data"
            )
            raise FileNotFoundError(
                f"data file {entry.path!r} not found: expected at {path}. Put the file there "
                f"({how}), or point the data_home argument or the FAIRPCA_DATA environment "
                "variable at the directory holding the data set folders."
            )
        _download(entry, path)
    _verify(path, entry.sha256)
    return path
