#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""test_viewer_browser.py VOXLOD DATA_DIR [--gpu] [--tree T.svo] [--screenshot OUT.png]
[--size WxH] - the page of `voxlod view` in a real browser: headless chromium driven by selenium
against `voxlod view --cpu` (or --gpu) on a small tree. The page loads, a frame arrives and shows
the object (pixel statistics of a screenshot), a drag, a key and the wheel change the view, the
level-of-detail and shading controls change the image, a resize gets a frame of the new size, the
PNG button returns a PNG, the overlay shows numbers, and the copied camera is a `voxlod render`
command that runs. The server encodes on 4 threads (--encode-threads 4): chromium decodes the frames
made of strips joined with restart markers, each band of 16 rows close to the lossless PNG.
--screenshot saves the page (for the docs) after the checks.

Skips (77) only where chromium, chromedriver or selenium are not installed, and says which."""
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from viewer_common import Server, make_tree, object_fraction, png_pixels  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
DRIVER = "/usr/bin/chromedriver"


def skip_reason():
    for path, pkg in [(CHROMIUM, "chromium"), (DRIVER, "chromium-driver")]:
        if not os.access(path, os.X_OK):
            return "%s is not installed (Debian package %s)" % (path, pkg)
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed for /usr/bin/python3 (Debian package python3-selenium)"
    return None


FAILS = []


def check(cond, name, why=""):
    print(("ok   " if cond else "FAIL ") + name + ("" if cond else ": " + str(why)), flush=True)
    if not cond:
        FAILS.append(name)
    return cond


def main():
    args = sys.argv[1:]
    if len(args) < 2:
        print(__doc__)
        return 2
    why = skip_reason()
    if why:  # scripts/deps.sh installs them: in CI a missing one is a failure
        print("SKIP: " + why)
        return 1 if os.environ.get("CI", "").lower() not in ("", "0", "false", "no") else 77
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.actions.wheel_input import ScrollOrigin
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import Select

    voxlod, data = args[0], args[1]
    opt = {"--tree": None, "--screenshot": None, "--size": "900x600"}
    for k in opt:
        if k in args:
            opt[k] = args[args.index(k) + 1]
    device = "--gpu" if "--gpu" in args else "--cpu"
    win_w, win_h = (int(x) for x in opt["--size"].split("x"))
    tmp = tempfile.mkdtemp(prefix="vx_browser_")
    tree = opt["--tree"] or make_tree(voxlod, data, tmp)
    srv = Server(voxlod, tree, device, "--encode-threads", "4", "-v", tmp=tmp)
    drv = None
    try:
        o = webdriver.ChromeOptions()
        o.binary_location = CHROMIUM
        for a in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                  "--force-device-scale-factor=1", "--window-size=%d,%d" % (win_w, win_h),
                  "--user-data-dir=" + os.path.join(tmp, "chromium")]:
            o.add_argument(a)
        o.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        drv = webdriver.Chrome(service=Service(DRIVER), options=o)
        drv.set_window_size(win_w, win_h)
        drv.set_script_timeout(30)

        def js(code, *a):
            return drv.execute_script(code, *a)

        def wait(cond_js, what, timeout=60, *a):
            t = time.time()
            while time.time() - t < timeout:
                v = js("try { return " + cond_js + "; } catch (e) { return null; }", *a)
                if v:
                    return v
                time.sleep(0.05)
            raise TimeoutError("waited %ds for %s" % (timeout, what))

        def next_full_frame(after, timeout=60):
            """Waits for a full-resolution frame newer than frame number `after`."""
            return wait("window.vx.header && vx.header.frame > arguments[0] && vx.header.full "
                        "&& vx.header", "a new frame", timeout, after)

        # a coarse grey signature of the canvas, to compare views
        sig_js = """const c = document.getElementById('view'), s = document.createElement('canvas');
                    s.width = 48; s.height = 32; const g = s.getContext('2d');
                    g.drawImage(c, 0, 0, 48, 32);
                    const d = g.getImageData(0, 0, 48, 32).data, out = [];
                    for (let i = 0; i < d.length; i += 4) out.push((d[i] + d[i + 1] + d[i + 2]) / 3);
                    return out;"""

        def diff(a, b):
            return sum(abs(x - y) for x, y in zip(a, b)) / len(a)

        t0 = time.time()
        drv.get(srv.url)
        check(drv.title == "voxlod view", "the page loads", drv.title)
        hdr = wait("window.vx && vx.frames > 0 && vx.header", "the first frame")
        check(True, "a frame arrives (%.1fs after loading)" % (time.time() - t0))
        hdr = next_full_frame(0)
        cw, ch = js("const c = document.getElementById('view'); return [c.width, c.height];")
        check(hdr["w"] == cw and hdr["h"] == ch and cw > 100,
              "the frame fills the canvas (%dx%d)" % (cw, ch), str(hdr))
        shot = drv.get_screenshot_as_png()
        w, h, rgb = png_pixels(shot)
        frac = object_fraction(w, h, rgb, box=(w // 4, h // 4, 3 * w // 4, 3 * h // 4))
        check(0.05 < frac < 0.95, "the screenshot shows the object (%.0f%% of the centre is not "
              "background)" % (100 * frac))
        hud = drv.find_element(By.ID, "hud").text
        check(re.search(r"frame \d+\.\d+ ms", hud) and re.search(r"[\d.]+ [kMGT]?rays/s", hud) and
              re.search(r"level \d+", hud) and re.search(r"[\d.]+ [kMGT]?nodes", hud) and
              re.search(r"\d+(\.\d+)? [KMG]?i?B", hud),
              "the overlay shows frame time, rays/s, level, nodes and memory", hud)

        canvas = drv.find_element(By.ID, "view")
        before = js(sig_js)
        n = hdr["frame"]
        ActionChains(drv).move_to_element(canvas).click_and_hold().move_by_offset(120, 30) \
            .move_by_offset(60, 10).release().perform()
        hdr = next_full_frame(n)
        after = js(sig_js)
        check(diff(before, after) > 2.0, "a drag turns the view (mean change %.1f)" % diff(before, after))

        n, before = hdr["frame"], after
        dist = js("return vx.cam.dist")
        ActionChains(drv).scroll_from_origin(ScrollOrigin.from_element(canvas), 0, 300).perform()
        hdr = next_full_frame(n)
        check(js("return vx.cam.dist") > dist and diff(before, js(sig_js)) > 1.0,
              "the wheel zooms")

        n, before = hdr["frame"], js(sig_js)
        canvas.send_keys(Keys.ARROW_LEFT)
        hdr = next_full_frame(n)
        check(diff(before, js(sig_js)) > 1.0, "an arrow key turns the view")

        n, before = hdr["frame"], js(sig_js)
        Select(drv.find_element(By.ID, "lod")).select_by_value("2")
        hdr = wait("vx.header.lod === 2 && vx.header.full && vx.header", "a frame at level 2")
        check(diff(before, js(sig_js)) > 1.0, "level 2 of the LOD control changes the image")
        hud = drv.find_element(By.ID, "hud").text
        check("level 2 (4\u00b3)" in hud, "the overlay shows the level drawn", hud)
        Select(drv.find_element(By.ID, "lod")).select_by_value("auto")
        wait("vx.header.lod === 'auto' && vx.header", "a frame at auto LOD")
        check(True, "auto LOD draws")
        before = js(sig_js)
        Select(drv.find_element(By.ID, "shade")).select_by_value("normals")
        wait("vx.header.shade === 2 && vx.header.full && vx.header", "a frame shaded by normals")
        check(diff(before, js(sig_js)) > 1.0, "the shading control changes the image")
        Select(drv.find_element(By.ID, "shade")).select_by_value("smooth")
        Select(drv.find_element(By.ID, "lod")).select_by_value("finest")
        hdr = wait("vx.header.shade === 0 && vx.header.lod !== 'auto' && vx.header.lod > 2 && "
                   "vx.header.full && vx.header", "the finest level again")

        drv.find_element(By.ID, "png").click()
        png = wait("vx.png", "the PNG")
        check(png["head"] == [137, 80, 78, 71, 13, 10, 26, 10] and png["w"] == hdr["w"] and
              png["size"] > 1000, "the PNG button returns a %dx%d PNG" % (png["w"], png["h"]), str(png))

        # chromium's decode of the frame (strips joined with restart markers) against the lossless
        # PNG of the same view, band by band of 16 rows: a strip decoded wrong stands out
        err = drv.execute_async_script("""
            const done = arguments[arguments.length - 1];
            const c = document.getElementById('view'), w = c.width, h = c.height;
            const a = c.getContext('2d').getImageData(0, 0, w, h).data;
            createImageBitmap(vx.png.blob).then((bmp) => {
              const o = document.createElement('canvas');
              o.width = w; o.height = h;
              const g = o.getContext('2d');
              g.drawImage(bmp, 0, 0);
              const b = g.getImageData(0, 0, w, h).data, out = [];
              for (let y0 = 0; y0 < h; y0 += 16) {
                let s = 0, n = 0;
                for (let i = y0 * w * 4; i < Math.min(h, y0 + 16) * w * 4; i += 4, n += 3)
                  s += Math.abs(a[i] - b[i]) + Math.abs(a[i + 1] - b[i + 1]) +
                       Math.abs(a[i + 2] - b[i + 2]);
                out.push(s / n);
              }
              done(out);
            }, (e) => done(String(e)));""")
        good = isinstance(err, list) and bool(err)
        check(hdr["strips"] > 1 and good and max(err) < 10 and sum(err) / len(err) < 4,
              "the frame (%s strips joined) decodes in chromium close to the PNG in every band of "
              "16 rows (worst %.2f)" % (hdr.get("strips"), max(err) if good else -1),
              ["%.1f" % e for e in err] if good else err)

        drv.find_element(By.ID, "copy").click()
        cmd = wait("vx.command", "the camera command")
        check(cmd.startswith("voxlod render ") and "--eye " in cmd and "--target " in cmd,
              "copy camera gives the voxlod render arguments", cmd)
        argv = shlex.split(cmd)
        argv[0], argv[2], argv[3] = voxlod, tree, os.path.join(tmp, "copied.png")
        i = argv.index("--size")
        argv[i + 1] = "64x48"
        r = subprocess.run(argv + ["--cpu", "-q"], capture_output=True, text=True)
        check(r.returncode == 0 and os.path.getsize(argv[3]) > 0,
              "the copied command renders the same view", r.stderr)

        n = hdr["frame"]
        drv.set_window_size(win_w * 2 // 3, win_h * 2 // 3)
        hdr = wait("vx.header.frame > arguments[0] && vx.header.full && "
                   "vx.header.w === document.getElementById('view').width && "
                   "vx.header.w < arguments[1] && vx.header", "a frame after resizing", 60, n, cw)
        check(True, "a resized window gets a frame of its new size (%dx%d)" % (hdr["w"], hdr["h"]))

        errs = [e for e in drv.get_log("browser") if e.get("level") == "SEVERE"]
        check(not errs, "no errors in the browser's console", errs[:3])
        check(js("return vx.errors.length") == 0, "the server reported no error to the page",
              js("return vx.errors"))
        if opt["--screenshot"]:  # the default view, for the docs
            drv.set_window_size(win_w, win_h)
            n = js("return vx.header.frame")
            canvas.send_keys("r")
            js("document.getElementById('cmd').style.display = 'none'; status('');")
            wait("vx.header.frame > arguments[0] && vx.header.full && "
                 "vx.header.w === document.getElementById('view').width && vx.header", "the full frame",
                 120, n)
            time.sleep(1.5)  # the overlay's frame rate settles
            drv.save_screenshot(opt["--screenshot"])
            print("saved " + opt["--screenshot"])
    except Exception as e:  # noqa: BLE001
        check(False, "the browser session", repr(e))
    finally:
        if drv:
            drv.quit()
        code, _ = srv.stop()
        check(code == 0, "the server stops cleanly on Ctrl-C", srv.stderr()[-1500:])
        shutil.rmtree(tmp, ignore_errors=True)
    print("%d failed" % len(FAILS))
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
