import threading

import pytest

from fairpca._config import config_context, get_config, set_config


def test_config_context_restores_the_setting():
    assert get_config() == {"require_groups": False}
    with config_context(require_groups=True):
        assert get_config()["require_groups"] is True
        with config_context(require_groups=False):
            assert get_config()["require_groups"] is False
        assert get_config()["require_groups"] is True
    assert get_config()["require_groups"] is False


def test_config_context_restores_after_an_error():
    with pytest.raises(RuntimeError), config_context(require_groups=True):
        raise RuntimeError
    assert get_config()["require_groups"] is False


def test_set_config_checks_its_argument():
    with pytest.raises(TypeError, match="require_groups"):
        set_config(require_groups="yes")
    assert get_config()["require_groups"] is False


def test_setting_is_per_thread():
    seen = {}
    with config_context(require_groups=True):
        thread = threading.Thread(target=lambda: seen.update(get_config()))
        thread.start()
        thread.join()
    assert seen == {"require_groups": False}
