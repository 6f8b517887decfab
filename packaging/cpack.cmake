# Desktop integration and the Debian package: `cmake --build build --target package`
# or `cd build && cpack -G DEB`.
set(CROSSLAB_APP_ID io.github.crosslab.Crosslab)
set(CROSSLAB_ICON_SIZES 16 24 32 48 64 128 256)

if(CROSSLAB_BUILD_GUI)
  add_executable(render_icon ${PROJECT_SOURCE_DIR}/packaging/render_icon.cpp)
  target_link_libraries(render_icon PRIVATE Qt6::Gui Qt6::Svg)
  set(_icon_dir ${CMAKE_BINARY_DIR}/icons)
  set(_pngs)
  foreach(size ${CROSSLAB_ICON_SIZES})
    list(APPEND _pngs ${_icon_dir}/${size}.png)
  endforeach()
  add_custom_command(OUTPUT ${_pngs}
    COMMAND render_icon ${PROJECT_SOURCE_DIR}/resources/icons/crosslab.svg ${_icon_dir} ${CROSSLAB_ICON_SIZES}
    DEPENDS render_icon ${PROJECT_SOURCE_DIR}/resources/icons/crosslab.svg
    COMMENT "Rendering PNG icons")
  add_custom_target(crosslab_icons ALL DEPENDS ${_pngs})

  foreach(size ${CROSSLAB_ICON_SIZES})
    install(FILES ${_icon_dir}/${size}.png
            DESTINATION ${CMAKE_INSTALL_DATADIR}/icons/hicolor/${size}x${size}/apps
            RENAME ${CROSSLAB_APP_ID}.png)
  endforeach()
  install(FILES ${PROJECT_SOURCE_DIR}/resources/icons/crosslab.svg
          DESTINATION ${CMAKE_INSTALL_DATADIR}/icons/hicolor/scalable/apps RENAME ${CROSSLAB_APP_ID}.svg)
  install(FILES ${PROJECT_SOURCE_DIR}/resources/desktop/${CROSSLAB_APP_ID}.desktop
          DESTINATION ${CMAKE_INSTALL_DATADIR}/applications)
  install(FILES ${PROJECT_SOURCE_DIR}/resources/desktop/${CROSSLAB_APP_ID}.metainfo.xml
          DESTINATION ${CMAKE_INSTALL_DATADIR}/metainfo)
endif()

set(CPACK_PACKAGE_NAME crosslab)
set(CPACK_PACKAGE_VENDOR "crosslab")
set(CPACK_PACKAGE_CONTACT "crosslab maintainers <crosslab@users.noreply.github.com>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)  # dependencies from the linked libraries
# Loaded at run time, so shlibdeps cannot see them: the xcb platform plugin and the SVG
# image plugin (the window icon). And the BLAS the engine's figures assume: libtorch links
# libblas.so.3, which without OpenBLAS is Debian's reference BLAS, ~30x slower in fp32
# (`crosslab-cli version` names the BLAS in use).
set(CPACK_DEBIAN_PACKAGE_DEPENDS "qt6-qpa-plugins, libqt6svg6, libopenblas0-openmp")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "openssh-client")
set(CPACK_GENERATOR DEB)
include(CPack)
