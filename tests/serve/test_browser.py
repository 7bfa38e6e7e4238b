"""The page in a real browser: headless Chromium (Debian's, through Selenium and the system
chromedriver) against ``layoutproof serve`` on a loopback port.  Types expressions, waits
for the picture, reads verdicts, follows a shared link, checks the counterexample marked on
the picture; keeps screenshots of the main views (``$LAYOUTPROOF_SERVE_ARTIFACTS``, else a
pytest temporary folder).  Skipped, with the reason, where no browser is installed."""

from __future__ import annotations

import json
import os
import shutil
import urllib.request
from urllib.parse import quote

import pytest
from browser import find_browser, start
from serve_fixtures import artifacts, server_url  # noqa: F401 (fixtures)

_browser, _driver, _why = find_browser()
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(_browser is None, reason=f"no browser for the page tests: {_why}"),
]

WAIT_S = 30
JSON = {"Content-Type": "application/json"}


@pytest.fixture(scope="module")
def page(server_url):
    from selenium.common.exceptions import WebDriverException

    try:
        driver, profile = start()
    except WebDriverException as e:  # an installed browser that cannot start here
        pytest.skip(f"headless Chromium did not start: {str(e)[:200]}")
    driver.set_page_load_timeout(WAIT_S)
    yield driver
    driver.quit()
    shutil.rmtree(profile, ignore_errors=True)


def wait(driver, cond, what):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, WAIT_S, poll_frequency=0.05).until(lambda d: cond(d), message=what)


def by_id(driver, i):
    return driver.find_element("id", i)


def cells(driver, container):
    return driver.find_elements("css selector", f"#{container} svg g.cell")


def open_view(driver, server_url, **state):
    driver.get("about:blank")
    driver.get(server_url + "/#" + "&".join(f"{k}={quote(str(v), safe='')}" for k, v in state.items()))
    wait(
        driver, lambda d: d.find_element("tag name", "body").get_attribute("data-ready") == "1", "page ready"
    )


def shot(driver, artifacts, name):
    """A screenshot of the whole page (the window stretched to the page's height)."""
    path = os.path.join(artifacts, f"playground-{name}.png")
    size = driver.get_window_size()
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(size["width"], min(max(int(height) + 20, 600), 2400))
    try:
        driver.save_screenshot(path)
    finally:
        driver.set_window_size(size["width"], size["height"])
    assert os.path.getsize(path) > 1000


def type_expr(driver, text):
    box = by_id(driver, "expr")
    box.clear()
    box.send_keys(text)
    by_id(driver, "run").click()


def test_type_an_expression_and_see_its_picture(page, server_url, artifacts):
    from selenium.webdriver.common.action_chains import ActionChains

    open_view(page, server_url)
    type_expr(page, "composition((4,(2,2)):(2,(1,8)), (2,4):(1,2))")
    wait(page, lambda d: by_id(d, "value").text == "(2,(2,2)):(2,(4,1))", "the value")
    wait(page, lambda d: len(cells(d, "picture")) == 8, "the picture's 8 cells")
    offsets = sorted(int(c.get_attribute("data-offset")) for c in cells(page, "picture"))
    assert offsets == list(range(8))
    cell = next(
        c
        for c in cells(page, "picture")
        if c.get_attribute("data-row") == "1" and c.get_attribute("data-col") == "2"
    )
    ActionChains(page).move_to_element(cell).perform()
    wait(page, lambda d: "coordinate (1,2) = 5" in by_id(d, "hover").text, "the hover line")
    assert by_id(page, "hover").text.endswith("offset " + cell.get_attribute("data-offset"))
    shot(page, artifacts, "layout")


def test_verdict_with_the_counterexample_marked(page, server_url, artifacts):
    open_view(page, server_url, expr="(4,8):(8,1)")
    wait(page, lambda d: len(cells(d, "picture")) == 32, "the picture")
    other = by_id(page, "other")
    other.clear()
    other.send_keys("(4,8):(1,4)")
    by_id(page, "btn-equal").click()
    wait(page, lambda d: by_id(d, "verdict-status").text.lower() == "refuted", "the verdict")
    assert "coordinate 1 = (1,0): 8 != 1" in by_id(page, "verdict-text").text
    marked = page.find_elements("css selector", "#picture g.cell.witness")
    assert [(m.get_attribute("data-row"), m.get_attribute("data-col")) for m in marked] == [("1", "0")]
    assert len(page.find_elements("css selector", "#witness-picture g.cell.witness")) == 1
    shot(page, artifacts, "counterexample")
    # the link reproduces the view: same expression, the check run again, the same cell marked
    by_id(page, "share").click()
    url = wait(page, lambda d: by_id(d, "share").get_attribute("data-url"), "the shared link")
    assert "check=equal" in url and "other=" in url
    page.get("about:blank")
    page.get(url)
    wait(page, lambda d: by_id(d, "verdict-status").text.lower() == "refuted", "the verdict after the link")
    assert by_id(page, "expr").get_attribute("value") == "(4,8):(8,1)"
    assert by_id(page, "other").get_attribute("value") == "(4,8):(1,4)"
    wait(page, lambda d: len(d.find_elements("css selector", "#picture g.cell.witness")) == 1, "the mark")


def test_symbolic_proof_and_drawing_at_values(page, server_url):
    open_view(page, server_url, expr="coalesce((M,N):(1,M))", values="M=4, N=3", other="M*N:1", check="equal")
    wait(page, lambda d: by_id(d, "verdict-status").text.lower() == "proved", "the proof")
    assert by_id(page, "value").text == "M*N:1"
    wait(page, lambda d: len(cells(d, "picture")) == 12, "the picture at M=4, N=3")
    # a symbolic counterexample is drawn at its values, and marked on the picture drawn at them
    claim = {"kind": "equal", "expr": "(M,N):(1,M)", "other": "(M,N):(N,1)"}
    req = urllib.request.Request(server_url + "/api/check", json.dumps(claim).encode(), JSON)
    with urllib.request.urlopen(req, timeout=WAIT_S) as r:
        d = json.loads(r.read())
    asg = d["counterexample"]["assignment"]
    values = ", ".join(f"{k}={v}" for k, v in sorted(asg.items()))
    open_view(page, server_url, expr=claim["expr"], values=values, other=claim["other"], check="equal")
    wait(page, lambda d: by_id(d, "verdict-status").text.lower() == "refuted", "the refutation")
    marked = page.find_elements("css selector", "#picture g.cell.witness")
    cell = [str(x) for x in d["witness_cell"]]
    assert [[m.get_attribute("data-row"), m.get_attribute("data-col")] for m in marked] == [cell]


def test_refused_operation_admissibility_and_explanation(page, server_url, artifacts):
    shah = "composition((6,2):(1,7), (3,2):(2,3))"
    open_view(page, server_url, expr=shah, check="admissible")
    wait(page, lambda d: by_id(d, "verdict-status").text.lower() == "refuted", "admissibility")
    err = by_id(page, "error")
    assert err.is_displayed() and err.get_attribute("data-condition") == "disjointness of B's modes in A"
    assert "witness: 5" in err.text
    assert len(page.find_elements("css selector", "#witness-picture g.cell.witness")) == 1
    by_id(page, "tab-explain").click()
    by_id(page, "btn-explain").click()
    wait(page, lambda d: by_id(d, "explain-status").text.lower() == "refused", "the explanation")
    repairs = page.find_elements("css selector", "#repairs li")
    assert repairs and "pad extent 6" in repairs[0].text
    assert len(page.find_elements("css selector", "#explain-picture g.cell.witness")) == 1
    shot(page, artifacts, "explain")
    link = repairs[0].find_element("tag name", "a")
    assert link.text == "composition((7,2):(1,7), (3,2):(2,3))"
    link.click()  # a repair is a link to its own view
    wait(page, lambda d: by_id(d, "value").text == "(3,2):(2,3)", "the repaired value")
    assert not by_id(page, "error").is_displayed()


def test_swizzle_before_and_after(page, server_url, artifacts):
    open_view(page, server_url, expr="Sw<3,3,3> o (8,64):(64,1)", color="bank", bytes="2")
    wait(page, lambda d: len(cells(d, "before")) == 512 and len(cells(d, "picture")) == 512, "both pictures")
    assert by_id(page, "before-fig").is_displayed()
    shot(page, artifacts, "swizzle")


def test_tv_layout(page, server_url, artifacts):
    open_view(page, server_url, expr="((4,8),2):((16,1),8)", tv="(8,8)")
    wait(page, lambda d: len(cells(d, "picture")) == 64, "the TV picture")
    threads = {int(c.get_attribute("data-thread")) for c in cells(page, "picture")}
    assert threads == set(range(32))
    shot(page, artifacts, "tv")
    # SM70's quad-pair thread ids: 8 threads shown as 0-3 and 16-19
    open_view(page, server_url, expr="(8,4):(1,8)", tv="(8,4)", thr_id="(4,2):(1,16)")
    wait(page, lambda d: len(cells(d, "picture")) == 32, "the TV picture with ThrID")
    threads = {int(c.get_attribute("data-thread")) for c in cells(page, "picture")}
    assert threads == {0, 1, 2, 3, 16, 17, 18, 19}


def test_analysis_and_export(page, server_url, artifacts):
    open_view(page, server_url, expr="Sw<3,3,3> o (8,64):(64,1)", tab="analyses", analysis="banks")
    by_id(page, "btn-analyze").click()
    wait(page, lambda d: by_id(d, "analysis-status").text.lower() == "proved", "the bank analysis")
    acc = by_id(page, "a-data")
    acc.clear()
    acc.send_keys("(8,64):(64,1)")
    by_id(page, "btn-analyze").click()
    wait(
        page,
        lambda d: (
            by_id(d, "analysis-status").text.lower() == "refuted"
            and "8-way" in by_id(d, "analysis-text").text
        ),
        "the 8-way conflict",
    )
    shot(page, artifacts, "analysis")
    by_id(page, "tab-export").click()
    wait(page, lambda d: "make_composed_layout" in by_id(d, "export-cpp").text, "the C++ export")
    assert "cute.make_composed_layout" in by_id(page, "export-dsl").text
    assert "Swizzle(3, 3, 3)" in by_id(page, "export-pycute").text
    shot(page, artifacts, "export")


def test_errors_are_shown_not_thrown(page, server_url):
    open_view(page, server_url)
    type_expr(page, "composition((4,2):(1,4),")
    wait(page, lambda d: by_id(d, "error").is_displayed(), "the error box")
    assert "MalformedLayoutError" in by_id(page, "error").text
    assert page.find_elements("css selector", "#picture svg") == []
